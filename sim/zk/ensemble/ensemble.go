// Package ensemble is a simulated ZooKeeper ensemble that speaks the
// client wire protocol (package wire) to an unmodified
// github.com/go-zookeeper/zk client over fake TCP connections, inside a
// testing/synctest bubble.
//
// It runs in one of two modes: standalone (New), with its own event loop,
// or on a sim.World's kernel in bubble mode (NewOnWorld, world.go), where
// the world's faults (partitions, host pauses and crashes, drop and delay
// filters, triggers) act on it and its trace is the world's.
//
// What it models, after ZooKeeper 3.8's Zab and server pipeline:
//   - 1, 3 or 5 servers; one leader; a write is forwarded to the leader,
//     prepared there against the authoritative tree, committed once a
//     quorum of servers can log it, and applied by each server when the
//     commit reaches it (PeerLatency, plus a per-server ApplyLag). The
//     server the client talks to replies only after applying, so a client
//     always reads its own writes; other servers may still show the old
//     tree (this is the CURATOR-604 window).
//   - requests of one connection are answered in order (FIFO per session);
//     reads are answered from the local server's copy.
//   - a failed write still consumes a zxid, as ZooKeeper logs it as an
//     error transaction; creating and closing a session are transactions.
//   - the leader expires sessions: each session's deadline is its last
//     contact plus its timeout, rounded up to a tick (ExpiryQueue); the
//     closeSession transaction deletes its ephemeral nodes and, when the
//     server holding the client's connection applies it, that server closes
//     the connection so the client learns the session expired on reconnect.
//   - a leader crash stops writes: the others notice at once (the TCP
//     connection to it breaks), go LOOKING, close their clients' connections
//     and elect a new leader after ElectionTime: the member of a majority of
//     mutually reachable servers with the highest logged zxid, then the
//     highest id (FastLeaderElection's order). Every session's deadline is
//     restarted by the new leader.
//   - a partition is noticed after SyncLimit ticks (the follower's read
//     timeout on the leader, the leader's ack timeout): a server cut off
//     from the quorum then stops serving and closes its clients'
//     connections; a leader left without a quorum steps down. Until then
//     writes stall and reads on the minority are stale.
//   - a client reconnecting with session id and password resumes its
//     session on any serving server, once the leader has revalidated it
//     (a follower cut off from the leader holds the handshake until the
//     link heals); a server whose tree is older than the zxid the client
//     last saw refuses the connection (closes it).
//   - network faults act on connections as TCP does: a partition holds
//     messages (delivered in order once it heals, if the connection still
//     exists); Drop resets a connection (the client reconnects and
//     re-registers its watches with setWatches); a crashed server resets
//     its connections.
//
// ZooKeeper's defaults, used when a Config field is zero: tickTime 2 s,
// initLimit 10 ticks, syncLimit 5 ticks, session timeouts clamped to
// [2, 20] ticks. ElectionTime defaults to 400 ms: FastLeaderElection's
// 200 ms finalize wait plus the new leader's sync with its followers
// (measured elections take a few hundred milliseconds to a few seconds;
// initLimit bounds the sync at 20 s).
//
// Not modelled: ACL checks (ACLs are required but not enforced), auth,
// containers and TTL nodes, observers, reconfig, sync() (answered at once),
// the 1 MB jute.maxbuffer limit on writes.
package ensemble

import (
	"crypto/sha256"
	"fmt"
	record "github.com/locklab/locklab/sim/event"
	"hash"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/zk/wire"
)

const maxFrame = 4 << 20

// Config sizes and times an ensemble.
type Config struct {
	Servers           int           // 1, 3 or 5 (default 3)
	TickTime          time.Duration // default 2 s
	InitLimit         int           // ticks; default 10 (documentation only: bounds ElectionTime)
	SyncLimit         int           // ticks; default 5: how long a partition goes unnoticed
	ElectionTime      time.Duration // default 400 ms
	ClientLatency     time.Duration // one way, client to server; default 1 ms
	PeerLatency       time.Duration // one way, server to server; default 1 ms
	ApplyLag          map[int]time.Duration
	MinSessionTimeout time.Duration // default 2 ticks
	MaxSessionTimeout time.Duration // default 20 ticks
}

func (c Config) withDefaults() Config {
	if c.Servers == 0 {
		c.Servers = 3
	}
	if c.TickTime == 0 {
		c.TickTime = 2 * time.Second
	}
	if c.InitLimit == 0 {
		c.InitLimit = 10
	}
	if c.SyncLimit == 0 {
		c.SyncLimit = 5
	}
	if c.ElectionTime == 0 {
		c.ElectionTime = 400 * time.Millisecond
	}
	if c.ClientLatency == 0 {
		c.ClientLatency = time.Millisecond
	}
	if c.PeerLatency == 0 {
		c.PeerLatency = time.Millisecond
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	return c
}

// Stats are an ensemble's counters, for reports and benchmarks.
type Stats struct {
	Events          int64 // events the loop delivered
	Messages        int64 // client messages delivered (both directions)
	Notifications   int64 // watch notifications sent to clients
	SessionsExpired int64
	Elections       int64
}

// Stats reads the counters (safe while the ensemble runs).
func (e *Ensemble) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Lost lists the messages LoseNext ate and the crashes CrashLeaderOn
// caused, in order.
func (e *Ensemble) Lost() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string{}, e.lost...)
}

// Ensemble is the simulated ZooKeeper service. Create it inside a
// synctest bubble with New and Stop it before the bubble ends.
type Ensemble struct {
	mu  sync.Mutex
	cfg Config

	servers []*server
	byName  map[string]*server
	leader  int // index into servers, -1 while there is none
	epoch   int64
	counter int64
	auth    *tree // the leader's authoritative tree (what is committed)
	log     []*txn
	stalled []*proposal // writes waiting for a quorum

	sessions    map[int64]*session
	nextSession int64
	ticking     bool
	electing    bool

	cuts      map[[2]string]bool
	lossRules []lossRule
	conns     []*Conn
	hostConns map[string]int
	settles   map[string]int // per client host, keys its settle events (reconnect.go)
	delays    map[string]time.Duration
	paused    map[string]bool
	resumed   chan struct{} // closed and replaced on every Resume
	start     time.Time

	drv      driver
	queue    eventQueue // loopDriver's
	seq      uint64
	kick     chan struct{}
	stop     chan struct{}
	stopped  chan struct{}
	stopping bool

	digest hash.Hash
	// Trace, if set, gets one line per delivered message.
	Trace io.Writer

	stats Stats
	lost  []string

	// World mode (world.go): the world, its hosts for the servers, and
	// the client hosts that crashed (their dials are refused).
	w            *sim.World
	hosts        []*sim.Host
	crashedHosts map[string]bool
	observed     map[*sim.Message]bool // frames observers saw that a cut then held
	clients      []*zk.Conn            // made by Connect; Shutdown closes them
}

type server struct {
	e       *Ensemble
	id      int // 1-based, as in zoo.cfg server.N
	name    string
	up      bool
	serving bool  // following the current leader (or leading) and serving clients
	logged  int   // how many log entries it has logged
	applied int   // how many it has applied to its tree
	tree    *tree // its applied copy
	conns   []*Conn

	heldFwd []*proposal // writes forwarded to a leader it cannot reach now
	// heldRevalidations are reconnecting clients' session checks waiting
	// for the link to the leader (see server.connect).
	heldRevalidations []func()

	dataW  map[string]map[*Conn]bool // set by exists and getData
	childW map[string]map[*Conn]bool // set by getChildren
}

type session struct {
	id        int64
	passwd    []byte
	timeout   time.Duration
	lastTouch time.Time
	conn      *Conn // where the client is connected now
	closing   bool
}

// txn is a committed transaction as every server replays it.
type txn struct {
	zxid    int64
	ms      int64
	effects []effect
	res     result
	origin  *Conn // the connection whose request it answers (nil if none)
	xid     int32 // the request's xid
	kind    int32 // wire op, or opCreateSession / opCloseSession
	session int64 // for session transactions
	connect *connectReply
}

type connectReply struct {
	resp wire.ConnectResponse
}

const (
	opCreateSession int32 = -10
	opCloseSession  int32 = -11 // wire.OpClose; also used for expiry
)

type proposal struct {
	req    wire.Request
	origin *Conn
	kind   int32
	sess   int64
	apply  func(*txn)
}

// New builds and starts an ensemble: servers zk1…zkN, zkN the first leader
// (FastLeaderElection's tie-break on the highest id when all logs are
// empty). It must be called inside a synctest bubble.
func New(cfg Config) *Ensemble {
	e := newEnsemble(cfg, time.Now())
	e.drv = loopDriver{e}
	go e.loop()
	return e
}

// newEnsemble builds the servers; start is instant zero of the run.
func newEnsemble(cfg Config, start time.Time) *Ensemble {
	cfg = cfg.withDefaults()
	e := &Ensemble{
		cfg: cfg, byName: map[string]*server{}, auth: newTree(),
		sessions: map[int64]*session{}, cuts: map[[2]string]bool{}, hostConns: map[string]int{}, settles: map[string]int{}, delays: map[string]time.Duration{}, paused: map[string]bool{}, resumed: make(chan struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
		start: start, digest: sha256.New(), crashedHosts: map[string]bool{},
	}
	for i := 1; i <= cfg.Servers; i++ {
		s := &server{e: e, id: i, name: fmt.Sprintf("zk%d", i), up: true, tree: newTree(),
			dataW: map[string]map[*Conn]bool{}, childW: map[string]map[*Conn]bool{}}
		e.servers = append(e.servers, s)
		e.byName[s.name] = s
	}
	e.leader = len(e.servers) - 1
	e.epoch = 1
	for _, s := range e.servers {
		s.serving = true
	}
	return e
}

// Stop ends the loop and resets every connection still open, so the
// clients' goroutines can end with the bubble. In world mode it is
// Shutdown (the world's kernel is the loop).
func (e *Ensemble) Stop() {
	e.Shutdown()
	if e.w == nil {
		<-e.stopped
	}
}

// Shutdown resets every connection and, from then on, refuses dials and
// fails writes at once, without entering the world's kernel, so the
// clients' goroutines end quickly once the run is over. In world mode it
// also closes every client Connect made, each from a goroutine of its own
// (go-zookeeper's Close waits up to a second for its close request), and
// has the world's end wait for those (World.WaitAtEnd), so no client
// goroutine outlives the run. NewOnWorld registers it with
// World.OnRunEnd; calling it again is harmless. It only takes e.mu, so it
// may be called with the kernel held (and in world mode it must be).
func (e *Ensemble) Shutdown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return
	}
	e.stopping = true
	for _, c := range e.conns {
		c.reset("")
	}
	close(e.stop)
	for _, c := range e.clients {
		done := make(chan struct{})
		e.w.WaitAtEnd(done)
		go func() {
			defer close(done)
			c.Close()
		}()
	}
	e.clients = nil
}

// Close closes a client Connect made, once: the ensemble forgets it, so
// Shutdown will not close it again. (go-zookeeper v1.0.4 guards Close
// with a sync.Once, so a second Close would not panic; but Shutdown would
// still start a goroutine for it and make the run's end wait for it, and
// a closed handle has no place among the clients the end winds down.)
// A client that replaces its handle itself,
// as Curator does when it declares its session LOST, closes the old one
// here. If Shutdown already took the client, Shutdown closes it and Close
// does nothing. Call it outside the world's kernel: go-zookeeper's Close
// waits up to a second for its close request, which the kernel delivers.
func (e *Ensemble) Close(c *zk.Conn) {
	e.mu.Lock()
	mine := false
	for i, k := range e.clients {
		if k == c {
			e.clients = append(e.clients[:i:i], e.clients[i+1:]...)
			mine = true
			break
		}
	}
	standalone := e.w == nil
	e.mu.Unlock()
	if mine || standalone {
		c.Close()
	}
}

// Addrs are the servers' addresses for zk.Connect.
func (e *Ensemble) Addrs() []string {
	var out []string
	for _, s := range e.servers {
		out = append(out, s.name+":2181")
	}
	return out
}

// Connect opens an unmodified go-zookeeper client on host: the ensemble's
// dialer, a deterministic host provider starting at server start, and
// go-zookeeper's log lines silenced, and 64 KiB buffers each way instead
// of the default 1.5 MiB (a hundred clients would otherwise allocate 300
// MiB; ZooKeeper's own limit on a packet is 1 MiB, and no recipe here comes
// near 64 KiB). cb, if not nil, is the client's event callback
// (zk.WithEventCallback).
//
// In world mode call it from any goroutine of the bubble (it does not
// block), but call the client's operations outside the kernel (a
// process's Outside): they wait for replies the kernel delivers. The run's
// end closes the client (see Shutdown).
func (e *Ensemble) Connect(host string, start int, sessionTimeout time.Duration, cb zk.EventCallback) (*zk.Conn, <-chan zk.Event, error) {
	if cb == nil {
		cb = func(zk.Event) {}
	}
	hp := NewHostProvider(start)
	hp.settle = func() { e.settle(host) }
	c, ch, err := zk.Connect(e.Addrs(), sessionTimeout,
		zk.WithDialer(e.Dialer(host)), zk.WithHostProvider(hp),
		zk.WithLogger(quietLogger{}), zk.WithEventCallback(cb),
		zk.WithMaxBufferSize(64<<10), zk.WithMaxConnBufferSize(64<<10))
	if err == nil && e.w != nil {
		e.mu.Lock()
		late := e.stopping
		if !late {
			e.clients = append(e.clients, c)
		}
		e.mu.Unlock()
		if late {
			c.Close()
		}
	}
	return c, ch, err
}

func (e *Ensemble) majority() int { return len(e.servers)/2 + 1 }

func (e *Ensemble) ms() int64 { return e.now().Sub(e.start).Milliseconds() }

func (e *Ensemble) nextZxid() int64 {
	e.counter++
	return e.epoch<<32 | e.counter
}

// cut reports whether a and b (host or server names) cannot reach each
// other.
func (e *Ensemble) cut(a, b string) bool {
	if e.paused[a] || e.paused[b] {
		return true
	}
	if a > b {
		a, b = b, a
	}
	return e.cuts[[2]string{a, b}]
}

func (e *Ensemble) reachable(a, b *server) bool {
	return a == b || (a.up && b.up && !e.cut(a.name, b.name))
}

// Leader is the name of the current leader, "" during an election.
func (e *Ensemble) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leader < 0 {
		return ""
	}
	return e.servers[e.leader].name
}

// Tree dumps a server's copy of the tree under path (see tree.dump).
func (e *Ensemble) Tree(serverName, under string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byName[serverName].tree.dump(under)
}

// Committed dumps the committed tree under path.
func (e *Ensemble) Committed(under string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.auth.dump(under)
}

// SessionAlive reports whether the leader still has the session.
func (e *Ensemble) SessionAlive(id int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessions[id] != nil
}

// ---- proposals and commits ----

// ---- sessions ----

func (e *Ensemble) touch(sess *session) {
	if e.sessions[sess.id] == sess {
		sess.lastTouch = e.now()
	}
	e.startTicking()
}

func (e *Ensemble) startTicking() {
	if e.ticking || len(e.sessions) == 0 {
		return
	}
	e.ticking = true
	tick := e.cfg.TickTime
	elapsed := e.now().Sub(e.start)
	next := (elapsed/tick + 1) * tick
	e.at(e.start.Add(next), 0, "", 0, e.expireTick)
}

// expireTick is the leader's SessionTracker: at each tick boundary it
// expires every session whose deadline, rounded up to a tick, has passed.
func (e *Ensemble) expireTick() {
	e.ticking = false
	if len(e.sessions) == 0 {
		return
	}
	if e.leader >= 0 && e.hasQuorum() {
		now := e.now()
		var ids []int64
		for id := range e.sessions {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			s := e.sessions[id]
			if s.closing {
				continue
			}
			dl := s.lastTouch.Add(s.timeout)
			tick := e.cfg.TickTime
			rounded := e.start.Add((dl.Sub(e.start) + tick - 1) / tick * tick)
			if !rounded.After(now) {
				if e.tracing() {
					e.record(e.servers[e.leader].name, record.Event{Kind: record.SessionExpired, Node: e.servers[e.leader].name, Session: fmt.Sprintf("0x%x", id), Delay: now.Sub(s.lastTouch), Timeout: s.timeout})
				}
				s.closing = true
				e.stats.SessionsExpired++
				e.commit(&proposal{kind: opCloseSession, sess: id})
			}
		}
	}
	e.startTicking()
}

// ---- failures ----
