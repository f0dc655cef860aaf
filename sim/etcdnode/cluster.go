// Package etcdnode is a simulated etcd cluster on the world's simulated
// network, for the unmodified go.etcd.io/etcd/client/v3 running in a
// synctest bubble (sim/bubble.go).
//
// Each member runs the real raft state machine (go.etcd.io/raft/v3), driven
// by the kernel (member.go); its log entries are etcd's own
// InternalRaftRequest; every member applies them to an MVCC key space with
// revisions (mvcc.go) and a lessor (lessor.go), whose leases only the
// leader times, on its own clock. Members serve etcdserverpb's KV, Lease
// and Watch services over gRPC (service.go, watch.go) on connections of
// sim/dbnet, so a partition, a pause, a dropped segment or a crash acts on
// the client's connection as it would on TCP. What the model covers and
// where it departs from etcd is in docs/etcd.md.
package etcdnode

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/dbnet"
)

// Config describes a cluster. Zero fields take etcd's defaults.
type Config struct {
	Members int // 1, 3 or 5; default 3
	// TickInterval is etcd's --heartbeat-interval (100 ms); ElectionTicks
	// its --election-timeout in ticks (1000 ms = 10 ticks).
	TickInterval  time.Duration
	ElectionTicks int
	// RequestTimeout is how long a member waits for its proposal to apply
	// before answering "request timed out" (etcd: 5 s + 2 election
	// timeouts).
	RequestTimeout time.Duration
	// ExpiryCheckTicks is how often, in ticks, the leader looks for
	// expired leases (etcd's lessor looks every 500 ms).
	ExpiryCheckTicks int
}

func (c Config) withDefaults() Config {
	if c.Members == 0 {
		c.Members = 3
	}
	if c.TickInterval == 0 {
		c.TickInterval = 100 * time.Millisecond
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 5*time.Second + 2*time.Duration(c.ElectionTicks)*c.TickInterval
	}
	if c.ExpiryCheckTicks == 0 {
		c.ExpiryCheckTicks = max(1, int(500*time.Millisecond/c.TickInterval))
	}
	return c
}

// Port is the client port every member answers on.
const Port = 2379

// Cluster is the simulated etcd cluster of one world.
type Cluster struct {
	w         *sim.World
	net       *dbnet.Net
	cfg       Config
	members   []*Member
	byID      map[uint64]*Member
	byName    map[string]*Member
	clusterID uint64
	clients   []*clientv3.Client
	dials     map[string]int
	endc      chan struct{} // closed when the run ends
}

// NewOnWorld builds a cluster of members etcd1…etcdN on w, which must run
// in a synctest bubble (w.UseBubble()); call it inside the bubble before
// w.Run. etcd1 campaigns at once, so it leads first.
func NewOnWorld(w *sim.World, cfg Config) *Cluster {
	if !w.Bubble() {
		panic("etcdnode.NewOnWorld: the world must run in a synctest bubble (call w.UseBubble first)")
	}
	cfg = cfg.withDefaults()
	c := &Cluster{w: w, cfg: cfg, byID: map[uint64]*Member{}, byName: map[string]*Member{}, clusterID: 0x10c4, dials: map[string]int{}, endc: make(chan struct{})}
	c.net = dbnet.New(w, newFrameCodec)
	for i := 1; i <= cfg.Members; i++ {
		m := &Member{c: c, ID: uint64(i), Name: fmt.Sprintf("etcd%d", i)}
		srv := c.net.AddServer(m.Name, dbnet.Keepalive{}, func(dbnet.Service) dbnet.Service { return newServer(m) })
		m.Host = srv.Host
		c.members = append(c.members, m)
		c.byID[m.ID] = m
		c.byName[m.Name] = m
	}
	for _, m := range c.members {
		m.boot(false)
	}
	w.OnHostChange(c.hostChanged)
	w.OnRunEnd(func() { close(c.endc) })
	w.OnRunEnd(c.closeClients)
	first := c.members[0]
	_ = first.node.Campaign()
	first.process()
	return c
}

// Members lists the members in order.
func (c *Cluster) Members() []*Member { return append([]*Member(nil), c.members...) }

// Member finds a member by name.
func (c *Cluster) Member(name string) *Member { return c.byName[name] }

// Leader is the member that leads now (nil if none does).
func (c *Cluster) Leader() *Member {
	for _, m := range c.members {
		if m.isLeader() {
			return m
		}
	}
	return nil
}

// Endpoints are the members' client addresses.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.Name + ":" + strconv.Itoa(Port)
	}
	return eps
}

// Crash stops a member (kernel held); Restart brings it back with its raft
// log or empty.
func (c *Cluster) Crash(name string) {
	if m := c.byName[name]; m != nil {
		m.crash()
	}
}

// Restart restarts a crashed member (kernel held).
func (c *Cluster) Restart(name string, keepLog bool) {
	if m := c.byName[name]; m != nil {
		m.restart(keepLog)
	}
}

// minTTL is etcd's smallest lease TTL: one and a half election timeouts,
// rounded up to whole seconds (etcd's lessor minLeaseTTL).
func (c *Cluster) minTTL() int64 {
	et := time.Duration(c.cfg.ElectionTicks) * c.cfg.TickInterval
	return int64((3*et/2 + time.Second - 1) / time.Second)
}

func (c *Cluster) hostChanged(h *sim.Host, ch sim.HostChange) {
	m := c.byName[h.Name]
	if m == nil || m.Host != h {
		return
	}
	switch ch {
	case sim.HostResumed:
		m.resumed()
		m.process()
	case sim.HostCrashed:
		m.crash()
	}
}

// NewClient makes a clientv3 client for the client host, dialling the
// members through the simulated network; call it outside the kernel (a
// process's Outside). The run's end closes it. Endpoints default to every
// member. Four settings keep the run a function of its seed: the gRPC
// balancer is a round robin without grpc's random start (balancer.go),
// grpc's reconnect backoff has no jitter, clientv3's retry backoff a
// jitter too small to change a duration (it refuses 0), and the lease
// keep-alive stream opens a millisecond late (keepAlivePhase).
func (c *Cluster) NewClient(host *sim.Host, cfg clientv3.Config) (*clientv3.Client, error) {
	if len(cfg.Endpoints) == 0 {
		cfg.Endpoints = c.Endpoints()
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	cfg.BackoffJitterFraction = 1e-17
	bc := backoff.DefaultConfig
	bc.Jitter = 0
	cfg.DialOptions = append(cfg.DialOptions,
		grpc.WithContextDialer(c.dialer(host)),
		grpc.WithDisableServiceConfig(),
		grpc.WithDefaultServiceConfig(`{"loadBalancingPolicy":"`+balancerName+`"}`),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bc, MinConnectTimeout: 20 * time.Second}),
		grpc.WithChainStreamInterceptor(keepAlivePhase),
	)
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	registered := false
	c.w.Notify("etcd client "+host.Name, func() {
		registered = true
		c.clients = append(c.clients, cli)
	})
	if !registered {
		cli.Close()
		return nil, errEnded
	}
	return cli, nil
}

// keepAlivePhase opens each lease keep-alive stream a millisecond after
// clientv3 asks for it. clientv3's lessor starts two loops at the instant
// it opens that stream (client/v3/lease.go): sendKeepAliveLoop wakes every
// 500 ms and sends the keep-alives due, deadlineLoop wakes every second and
// drops the leases whose deadline passed. In virtual time they wake at the
// same instants, and which runs first — whether a lease past its deadline
// gets one more keep-alive — would be the Go scheduler's choice. A
// millisecond apart, they never meet.
func keepAlivePhase(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if method == "/etcdserverpb.Lease/LeaseKeepAlive" {
		time.Sleep(time.Millisecond)
	}
	return streamer(ctx, desc, cc, method, opts...)
}

// closeClients closes every client at the run's end, each on a goroutine
// the end of the run waits for.
func (c *Cluster) closeClients() {
	for _, cli := range c.clients {
		done := make(chan struct{})
		c.w.WaitAtEnd(done)
		go func() {
			defer close(done)
			_ = cli.Close()
		}()
	}
}

// dialer connects host to the member an address names.
func (c *Cluster) dialer(host *sim.Host) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		name, _, err := net.SplitHostPort(addr)
		if err != nil {
			name = addr
		}
		conn, err := c.net.Dial(host, name)
		if err != nil {
			return nil, err
		}
		n := 0
		c.w.Notify("etcd dial "+host.Name+">"+name, func() {
			c.dials[host.Name+">"+name]++
			n = c.dials[host.Name+">"+name]
		})
		return newFlushConn(c.w, conn, fmt.Sprintf("etcd flush %s#%d>%s up", host.Name, n, name)), nil
	}
}

// server is one member's gRPC server, a dbnet.Service: each connection
// dbnet hands it is accepted by the gRPC server through a listener.
type server struct {
	m    *Member
	srv  *grpc.Server
	lis  *connListener
	conn int
}

func newServer(m *Member) *server {
	s := &server{m: m, srv: grpc.NewServer(), lis: &connListener{name: m.Name, ch: make(chan net.Conn), closed: make(chan struct{})}}
	pb.RegisterKVServer(s.srv, &kvService{m: m})
	pb.RegisterLeaseServer(s.srv, &leaseService{m: m})
	pb.RegisterWatchServer(s.srv, &watchService{m: m})
	done := make(chan struct{})
	m.c.w.WaitAtEnd(done)
	go func() {
		defer close(done)
		_ = s.srv.Serve(s.lis)
	}()
	return s
}

// Serve hands one connection to the gRPC server and returns when it is
// closed.
func (s *server) Serve(conn net.Conn) error {
	client, _, _ := net.SplitHostPort(conn.RemoteAddr().String())
	n := 0
	s.m.c.w.Notify("etcd accept "+s.m.Name, func() { s.conn++; n = s.conn })
	fc := newFlushConn(s.m.c.w, conn, fmt.Sprintf("etcd flush %s<%s#%d down", s.m.Name, client, n))
	select {
	case s.lis.ch <- fc:
	case <-s.lis.closed:
		return conn.Close()
	}
	select {
	case <-fc.done:
	case <-s.lis.closed:
	}
	return nil
}

// Stop stops the gRPC server (kernel held: on a goroutine, since closing
// connections enters the kernel).
func (s *server) Stop() {
	s.lis.Close()
	done := make(chan struct{})
	s.m.c.w.WaitAtEnd(done)
	go func() {
		defer close(done)
		s.srv.Stop()
	}()
}

// connListener is a net.Listener fed by server.Serve.
type connListener struct {
	name   string
	ch     chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *connListener) Addr() net.Addr { return listenAddr(l.name) }

type listenAddr string

func (a listenAddr) Network() string { return "tcp" }
func (a listenAddr) String() string  { return string(a) + ":" + strconv.Itoa(Port) }

func itoa(n int) string { return strconv.Itoa(n) }

// Segments is the number of segments the client connections carried.
func (c *Cluster) Segments() int { return c.net.Segments() }
