// Package dbnet puts database servers on the world's simulated network.
//
// A database driver (pgx, go-sql-driver/mysql) dials through a DialFunc
// and gets a net.Conn whose bytes travel as segments under the world's
// kernel, in a synctest bubble (sim/bubble.go): each Write is one segment,
// judged by the world's fault filters, delayed or dropped by them, held
// while the link is cut (TCP retransmits until the link is back) or while
// either end's host is paused (the bytes wait in its socket buffers), and
// delivered at an instant ordered by the segment's content (connection and
// segment number), never by which goroutine wrote first. The server end
// of each connection is served by a Service — a simulated server speaking
// the real wire protocol over any net.Conn (sim/pgnode, a MySQL server) —
// on a goroutine of the bubble.
//
// What the fault model needs from TCP:
//
//   - A lost segment resets the connection when it would have arrived: TCP
//     gives up on a segment that never gets through, and both ends see the
//     connection break (as the ZooKeeper ensemble does, sim/zk/ensemble).
//   - A server learns that a silent client is gone only through TCP
//     keepalive (Postgres' tcp_keepalives_idle/interval/count, Linux
//     tcp_keepalive_time/intvl/probes): after Idle without a segment it
//     probes every Interval, and after Count unanswered probes it ends the
//     connection, and the server its session — releasing the session's
//     locks while the client, cut off, still believes it holds them. A
//     paused client process does not stop its host's TCP stack from
//     answering probes; a crashed host or a cut link does.
//   - A crashed server process resets its connections (the RST reaches
//     each client when the link lets it); a restarted one starts with
//     what a restart keeps (Factory).
//   - Failover: an address (the name clients dial) can be pointed at
//     another server (Promote), as Patroni moves a virtual IP or HAProxy
//     its backend; connections already open stay where they are.
//
// Plugging a server in: anything that serves a net.Conn is a Service. A
// Postgres world (scenarios/postgres.go) is
//
//	n := dbnet.New(w, func() dbnet.Codec { return pgnode.NewCodec() })
//	n.AddServer("db1", ka, func(prev dbnet.Service) dbnet.Service { return pgnode.NewServer() })
//	cfg.DialFunc = n.DialFunc(clientHost) // pgx
//
// and a MySQL server the same way, with its own Codec (Server.Codec);
// go-sql-driver/mysql dials through mysql.RegisterDialContext, whose
// registry is global, so each client host needs its own network name
// ("sim-c1") whose dial function calls n.Dial(clientHost, addr). Dial
// must be called outside the kernel (a process's Outside, or the
// driver's own goroutine): it enters the kernel itself.
package dbnet

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

// Service serves one connection of a simulated database server until the
// client goes away or the connection fails. Serve must return once conn's
// reads and writes fail.
type Service interface {
	Serve(conn net.Conn) error
}

// Stopper is a Service that can be stopped all at once: a crash or the end
// of the run ends the waits its sessions are blocked in (a backend waiting
// for a lock does not read its socket, so a failing connection alone
// would not end it).
type Stopper interface {
	Stop()
}

// Codec names a connection's segments for the world's fault filters and
// the trace: the op a fault can match ("pg_advisory_lock", "BEGIN") and a
// summary, and the lock facts a server's reply carries. One Codec per
// connection: the protocol has state (the startup message comes first,
// replies answer requests in order).
type Codec interface {
	Request(seg []byte) (op, summary string)
	Reply(seg []byte) (op, summary string, facts []event.Event)
}

// Keepalive is TCP keepalive on the server's sockets. Idle 0 turns it off.
type Keepalive struct {
	Idle     time.Duration // silence before the first probe
	Interval time.Duration // between unanswered probes
	Count    int           // unanswered probes before the connection ends
}

// LinuxKeepalive is Linux's default (tcp_keepalive_time 7200 s,
// tcp_keepalive_intvl 75 s, tcp_keepalive_probes 9), which Postgres uses
// when tcp_keepalives_* are 0: two hours and a quarter before a dead
// client's session ends.
var LinuxKeepalive = Keepalive{Idle: 2 * time.Hour, Interval: 75 * time.Second, Count: 9}

// Server is one database server host.
type Server struct {
	Name string
	Host *sim.Host
	// Factory makes the service, at the start and at each restart; prev
	// is the crashed one (nil at the start), whose durable state (a
	// table row) the new one keeps.
	Factory   func(prev Service) Service
	Keepalive Keepalive
	// Relay marks a pooler: its answers relay a database's, so the lock
	// facts they carry are not recorded again.
	Relay bool
	// Codec, if set, names this server's segments instead of the Net's
	// codec (a world with a Postgres and a MySQL server).
	Codec func() Codec
	svc   Service
	down  bool
	n     *Net
}

// Service is the server's current service.
func (s *Server) Service() Service { return s.svc }

// Net is the database servers of one world and the connections to them.
type Net struct {
	w       *sim.World
	servers []*Server
	byName  map[string]*Server
	routes  map[string]string // address → server (Promote)
	codec   func() Codec
	conns   []*link
	dials   map[string]int
	ended   bool
	segs    int // segments carried
}

// New makes the world's database network; codec names segments (nil:
// plain byte counts). Call inside the bubble, before the run, with the
// world in bubble mode.
func New(w *sim.World, codec func() Codec) *Net {
	if !w.Bubble() {
		panic("dbnet.New: the world must run in a synctest bubble (call w.UseBubble first)")
	}
	n := &Net{w: w, byName: map[string]*Server{}, routes: map[string]string{}, codec: codec, dials: map[string]int{}}
	w.Net.OnCutChange(n.cutChanged)
	w.OnHostChange(n.hostChanged)
	w.OnRunEnd(n.shutdown)
	return n
}

// AddServer adds a server host called name, answering for address name.
func (n *Net) AddServer(name string, ka Keepalive, factory func(prev Service) Service) *Server {
	s := &Server{Name: name, Host: n.w.NewHost(name, nil), Factory: factory, Keepalive: ka, n: n}
	s.svc = factory(nil)
	n.servers = append(n.servers, s)
	n.byName[name] = s
	n.routes[name] = name
	return s
}

// Servers lists the servers in the order they were added.
func (n *Net) Servers() []*Server { return slices.Clone(n.servers) }

// Server finds a server by name.
func (n *Net) Server(name string) *Server { return n.byName[name] }

// Segments is the number of segments carried so far.
func (n *Net) Segments() int { return n.segs }

// Promote points address at server to (kernel held): new dials to the
// address reach it; open connections stay on their server.
func (n *Net) Promote(address, to string) {
	n.routes[address] = to
	n.w.Record(to, event.Event{Kind: event.DBPromoted, Node: to, To: address})
}

// Alias makes address lead to server (a service name such as "primary"
// that failover moves).
func (n *Net) Alias(address, server string) { n.routes[address] = server }

// Route is the server an address leads to now.
func (n *Net) Route(address string) string { return n.routes[address] }

// DialFunc is a driver's dial function for client host from: addr's host
// part names the server's address ("db1:5432"). Call it from a goroutine
// of the bubble outside the kernel (the driver's own).
func (n *Net) DialFunc(from *sim.Host) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		return n.Dial(from, host)
	}
}

var errEnded = errors.New("simulated network: the run has ended")

// Dial connects client host from to the server answering for address.
func (n *Net) Dial(from *sim.Host, address string) (net.Conn, error) {
	var c net.Conn
	err := errEnded
	n.w.ActFrom(from, "dial "+from.Name+">"+address, func() { c, err = n.dial(from, address) })
	return c, err
}

type refusedError struct{ addr, why string }

func (e *refusedError) Error() string {
	return fmt.Sprintf("dial tcp %s: connect: connection refused (%s)", e.addr, e.why)
}

func (n *Net) dial(from *sim.Host, address string) (net.Conn, error) {
	if n.ended {
		return nil, errEnded
	}
	if from.Crashed() {
		return nil, errHostDown
	}
	name, ok := n.routes[address]
	if !ok {
		var known []string
		for a := range n.routes {
			known = append(known, a)
		}
		slices.Sort(known)
		return nil, fmt.Errorf("dial %s: no such database server (known: %s)", address, strings.Join(known, ", "))
	}
	s := n.byName[name]
	if s.down {
		n.w.Record(from.Name, event.Event{Kind: event.DBConnRefused, Client: from.Name, Node: s.Name, Reason: "server down"})
		return nil, &refusedError{address, s.Name + " is down"}
	}
	pair := from.Name + ">" + s.Name
	n.dials[pair]++
	l := &link{n: n, srv: s, svc: s.svc, id: fmt.Sprintf("%s#%d>%s", from.Name, n.dials[pair], s.Name), lastHeard: n.w.Now()}
	switch {
	case s.Codec != nil:
		l.codec = s.Codec()
	case n.codec != nil:
		l.codec = n.codec()
	}
	l.client = newEnd(l, from, true)
	l.server = newEnd(l, s.Host, false)
	n.conns = append(n.conns, l)
	n.w.Record(from.Name, event.Event{Kind: event.DBConnOpened, Client: from.Name, Node: s.Name, Conn: l.id})
	done := make(chan struct{})
	n.w.WaitAtEnd(done)
	svc, srvEnd := s.svc, l.server
	go func() {
		defer close(done)
		_ = svc.Serve(srvEnd)
	}()
	l.armKeepalive()
	return l.client, nil
}

// Crash stops server name's process (kernel held): every connection to
// it is reset (the RST travels to each client when the link lets it),
// every session ends and its locks with it; it refuses dials until
// Restart.
func (n *Net) Crash(name string) {
	s := n.byName[name]
	if s == nil || s.down {
		return
	}
	s.down = true
	n.w.Record(name, event.Event{Kind: event.DBServerCrashed, Node: name})
	for _, l := range n.conns {
		switch {
		case l.srv == s:
			l.serverGone("server crashed")
		case l.client.host == s.Host:
			// A pooler's own connections to its server: the process is
			// gone, its host's TCP stack resets them.
			l.clientGone(name + " crashed")
		}
	}
	if st, ok := s.svc.(Stopper); ok {
		st.Stop()
	}
}

// Restart brings a crashed server back with a new service (Factory).
func (n *Net) Restart(name string) {
	s := n.byName[name]
	if s == nil || !s.down {
		return
	}
	s.down = false
	s.svc = s.Factory(s.svc)
	n.w.Record(name, event.Event{Kind: event.DBServerRestarted, Node: name})
}

// shutdown ends every connection at the end of the run (kernel held), so
// that the drivers' and the services' goroutines return.
func (n *Net) shutdown() {
	n.ended = true
	for _, l := range n.conns {
		l.client.fail(errEnded)
		l.server.fail(errEnded)
	}
	for _, s := range n.servers {
		if st, ok := s.svc.(Stopper); ok {
			st.Stop()
		}
	}
}

// cutChanged releases the segments a cut held once both directions of
// their link are open again (TCP needs both ways).
func (n *Net) cutChanged(from, to string, cut bool) {
	if cut || n.ended {
		return
	}
	for _, l := range n.conns {
		a, b := l.client.host.Name, l.server.host.Name
		if (a == from && b == to) || (a == to && b == from) {
			l.releaseStalled()
		}
	}
}

// hostChanged follows pauses and crashes: a paused host's segments wait
// for it to resume, in both directions; a crashed client host's
// connections fail on its side at once, and the server hears nothing (it
// learns through keepalive).
func (n *Net) hostChanged(h *sim.Host, ch sim.HostChange) {
	if n.ended {
		return
	}
	switch ch {
	case sim.HostResumed:
		for _, l := range n.conns {
			if l.client.host == h || l.server.host == h {
				l.releaseStalled()
			}
		}
	case sim.HostCrashed:
		for _, l := range n.conns {
			if l.client.host == h {
				l.client.fail(errHostDown)
			}
		}
		if s := n.byName[h.Name]; s != nil {
			n.Crash(h.Name)
		}
	}
}

// latency is one segment's one-way latency: the network's fixed part and
// a jitter drawn from the seed and the segment's key, so that which
// goroutine wrote first changes nothing.
func (n *Net) latency(key string) time.Duration {
	j := n.w.Net.Jitter
	if j <= 0 {
		return n.w.Net.Latency
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %s", n.w.Seed, key)
	return n.w.Net.Latency + time.Duration(h.Sum64()%uint64(j+1))
}

// reachable says whether a segment can cross between two hosts now.
func (n *Net) reachable(a, b *sim.Host) bool {
	return !n.w.Net.IsCut(a.Name, b.Name) && !n.w.Net.IsCut(b.Name, a.Name)
}
