package runner

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/zklock/gozk" // registers the gozk-* algorithms
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/zk/ensemble"
)

// The ZooKeeper ensemble backend's run half: the ensemble built in the
// world, the clients' sessions, and its matrix setup; its params and
// hosts are scenarios/ensemble.go's.
func init() {
	b := BackendInfo{Name: gozk.Backend, Build: newEnsembleBackend}
	// The ensemble needs no Redis node (a node nobody uses would only
	// draw faults that change nothing). ZooKeeper clamps a session to at
	// least 2 ticks and expires it on a tick boundary, so with its 2 s
	// tickTime a crashed holder blocks the lock for 4–6 s: longer than the
	// 2×TTL+1s liveness bound every algorithm is held to. A 500 ms tick
	// lets the session be the TTL (2 s, expired within 2.5 s), so the bound
	// means the same here as for the Redis locks.
	b.Matrix = func(_ algorithms.Info, ttl time.Duration) (int, map[string]string) {
		return 0, map[string]string{"session_timeout": ttl.String(), "tick_time": (ttl / 4).String()}
	}
	// The recipes wait on a watch, never on the file's wait policy.
	b.OwnWait = true
	b.ClockIgnored = func(name string) (string, string) {
		return "ZooKeeper times sessions with a monotonic clock (System.nanoTime), which a step of " + name + "'s wall clock does not move",
			"the simulated ensemble counts ticks of true time and keeps no clock per server, so " + name + "'s rate changes nothing"
	}
	RegisterBackend(b)
}

// ensembleConfig reads the scenario's params into an ensemble.Config.
func ensembleConfig(sc *scenarios.Scenario) (ensemble.Config, time.Duration, error) {
	cfg := ensemble.Config{Servers: scenarios.ZKServers(sc)}
	timeout := scenarios.DefaultSessionTimeout
	for _, p := range []struct {
		key string
		dst *time.Duration
	}{{"session_timeout", &timeout}, {"election_time", &cfg.ElectionTime}, {"tick_time", &cfg.TickTime}} {
		v, ok := sc.Params[p.key]
		if !ok {
			continue
		}
		d, err := faults.ParseDuration(v)
		if err != nil || d <= 0 {
			return cfg, 0, fmt.Errorf("params.%s: expected a positive duration such as 6s, got %q", p.key, v)
		}
		if p.key == "session_timeout" {
			// Run may get a scenario that skipped validation (a clone
			// edited in code): a 1 ns session never let a run end (issue 25).
			if err := scenarios.ZKSessionTimeout(v); err != nil {
				return cfg, 0, fmt.Errorf("params.%s: %v, got %q", p.key, err, v)
			}
		}
		*p.dst = d.D()
	}
	if v, ok := sc.Params["sync_limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return cfg, 0, fmt.Errorf("params.sync_limit: expected a whole number of ticks such as 5, got %q", v)
		}
		cfg.SyncLimit = n
	}
	if v, ok := sc.Params["apply_lag"]; ok {
		lag, err := scenarios.ParseApplyLag(v, cfg.Servers)
		if err != nil {
			return cfg, 0, fmt.Errorf("params.apply_lag: %v", err)
		}
		cfg.ApplyLag = lag
	}
	return cfg, timeout, nil
}

// worldEnsemble is what the backend uses of a sim/zk/ensemble Ensemble
// driven by the world's kernel.
type worldEnsemble interface {
	Hosts() []*sim.Host
	Connect(host string, start int, sessionTimeout time.Duration, cb zk.EventCallback) (*zk.Conn, <-chan zk.Event, error)
	Crash(name string)
	Restart(name string)
	Stats() ensemble.Stats
	Close(c *zk.Conn)
	Settle(host string)
}

// newOnWorld builds the ensemble on the world (ensemble_world.go); atEnd
// runs when the run ends, kernel held, after the ensemble has reset its
// connections.
var newOnWorld func(w *sim.World, cfg ensemble.Config, atEnd func()) worldEnsemble

// zkEnsemble is the backend of one run.
type zkEnsemble struct {
	w        *sim.World
	ens      worldEnsemble
	timeout  time.Duration
	servers  int
	clients  int
	sessions []*clientSession
}

// clientSession is one client's go-zookeeper connection and the
// subscribers to its session events.
type clientSession struct {
	gozk.Session
	mu     sync.Mutex
	subs   []func(zk.Event)
	atEnd  []func()
	closed bool
	// The handle in use and what Replace needs: the handle's number
	// (events of older handles are not reported), the server it started
	// at, and the end of the last replacement (they run one after the
	// other).
	cur       *zk.Conn
	gen       int
	start     int
	replacing chan struct{}
}

// callback is the event callback of handle number gen: it reports the
// events of the current handle only, so a replaced handle, which
// go-zookeeper tells of its own closing, does not start another LOST.
func (s *clientSession) callback(gen int) zk.EventCallback {
	return func(ev zk.Event) {
		s.mu.Lock()
		current := s.gen == gen
		s.mu.Unlock()
		if current {
			s.event(ev)
		}
	}
}

func (s *clientSession) event(ev zk.Event) {
	s.mu.Lock()
	subs := append([]func(zk.Event){}, s.subs...)
	s.mu.Unlock()
	for _, fn := range subs {
		fn(ev)
	}
}

// stop ends the recipe's background work (guaranteed deletes) at the
// end of the run. The ensemble itself closes the connections it still
// has (Shutdown); handles the recipe replaced it has closed already
// (replace).
func (s *clientSession) stop() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	atEnd := s.atEnd
	s.mu.Unlock()
	for _, fn := range atEnd {
		fn()
	}
}

func newEnsembleBackend(w *sim.World, sc *scenarios.Scenario) (Backend, error) {
	if !w.Bubble() {
		return nil, fmt.Errorf("backend %s runs the real go-zookeeper client and needs the bubble runtime (Options.Bubble)", gozk.Backend)
	}
	cfg, timeout, err := ensembleConfig(sc)
	if err != nil {
		return nil, err
	}
	b := &zkEnsemble{w: w, timeout: timeout, servers: cfg.Servers}
	if newOnWorld == nil {
		return nil, fmt.Errorf("backend %s: the ensemble cannot run on the world's kernel in this build", gozk.Backend)
	}
	// At the end of the run the ensemble resets and closes every client
	// (Shutdown); a recipe's background deletes must end too before the
	// bubble can. Stopping them waits for their goroutines, so it runs on a
	// goroutine of its own, never in the kernel, and the run's end waits
	// for it.
	b.ens = newOnWorld(w, cfg, func() {
		for _, s := range b.sessions {
			done := make(chan struct{})
			w.WaitAtEnd(done)
			go func() {
				defer close(done)
				s.stop()
			}()
		}
	})
	return b, nil
}

// Connect dials client host h into the ensemble, starting at its server
// (see the comment at the top of this file).
func (b *zkEnsemble) Connect(h *sim.Host) any {
	s := &clientSession{}
	start := b.clients % b.servers
	b.clients++
	s.start = start
	conn, _, err := b.ens.Connect(h.Name, start, b.timeout, s.callback(0))
	if err != nil {
		// Connect only builds the client; dialling happens later, so this
		// is a programming error in the backend, not a run's outcome.
		panic(fmt.Sprintf("zookeeper-ensemble: connecting %s: %v", h.Name, err))
	}
	hash := fnv.New64a()
	hash.Write([]byte("gozk guid " + h.Name))
	s.Session = gozk.Session{
		Conn: conn,
		OnEvent: func(fn func(zk.Event)) {
			s.mu.Lock()
			s.subs = append(s.subs, fn)
			s.mu.Unlock()
		},
		AtEnd: func(fn func()) {
			s.mu.Lock()
			s.atEnd = append(s.atEnd, fn)
			s.mu.Unlock()
		},
		Rand:           seededReader{rand.New(rand.NewPCG(b.w.Seed, hash.Sum64()))},
		SessionTimeout: b.timeout,
		Settle:         func() { b.ens.Settle(h.Name) },
		Notify:         func(fn func()) { b.w.NotifyFrom(h, "gozk "+h.Name, fn) },
		After: func(d time.Duration, fn func()) func() {
			ev := b.w.AtKey(b.w.Now()+d, "gozk lost "+h.Name, fn)
			return ev.Cancel
		},
		Replace: func(why string) <-chan *zk.Conn { return b.replace(h, s, why) },
	}
	s.cur = conn
	b.sessions = append(b.sessions, s)
	return &s.Session
}

// replace is Session.Replace (kernel held): the current handle is closed
// through the ensemble, which then no longer closes it at the run's end
// (Ensemble.Close: each handle is closed once), and a new one dials the next
// server of the connect string, as a new Curator handle picks another
// server. The work runs on a goroutine of its own, after any earlier
// replacement of this client, and the run's end waits for it.
func (b *zkEnsemble) replace(h *sim.Host, s *clientSession, why string) <-chan *zk.Conn {
	out := make(chan *zk.Conn, 1)
	done := make(chan struct{})
	s.mu.Lock()
	s.gen++
	gen := s.gen
	s.start = (s.start + 1) % b.servers
	start := s.start
	prev := s.replacing
	s.replacing = done
	s.mu.Unlock()
	if b.w.Tracing() {
		b.w.Record(h.Name, event.Event{Kind: event.SessionReopened, Client: h.Name, Node: fmt.Sprintf("zk%d", start+1), Reason: why})
	}
	b.w.WaitAtEnd(done)
	go func() {
		defer close(done)
		defer close(out)
		if prev != nil {
			<-prev
		}
		s.mu.Lock()
		old := s.cur
		s.mu.Unlock()
		b.ens.Close(old)
		conn, _, err := b.ens.Connect(h.Name, start, b.timeout, s.callback(gen))
		if err != nil {
			out <- nil
			return
		}
		s.mu.Lock()
		s.cur = conn
		s.mu.Unlock()
		out <- conn
	}()
	return out
}

func (b *zkEnsemble) Hosts() []*sim.Host { return b.ens.Hosts() }

// Servers are the ensemble's servers, for node-crash.
func (b *zkEnsemble) Servers() map[string]faults.Server {
	out := map[string]faults.Server{}
	for _, h := range b.ens.Hosts() {
		out[h.Name] = zkServer{b.ens, h.Name}
	}
	return out
}

// zkServer is one server as a node-crash sees it. A crash triggered by
// a message (after: {op: CREATE}) runs while the ensemble delivers that
// message: the ensemble shows its observers each frame with its own lock
// released, so Crash may take it.
type zkServer struct {
	e    worldEnsemble
	name string
}

func (s zkServer) Crash()   { s.e.Crash(s.name) }
func (s zkServer) Restart() { s.e.Restart(s.name) }

func (b *zkEnsemble) Metrics() []Metric {
	st := b.ens.Stats()
	return []Metric{
		{Name: "watch_notifications", Value: st.Notifications},
		{Name: "sessions_expired", Value: st.SessionsExpired},
		{Name: "elections", Value: st.Elections},
		{Name: "zk_client_messages", Value: st.Messages}, // frames between clients and servers, both ways
	}
}

// seededReader is an io.Reader of seeded bytes (the recipes' GUIDs).
type seededReader struct{ r *rand.Rand }

func (s seededReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(s.r.Uint32())
	}
	return len(p), nil
}
