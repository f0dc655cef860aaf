package locktest

// ZooKeeper locks: the user's code receives an unmodified go-zookeeper
// *zk.Conn connected to the simulated ensemble (sim/zk/ensemble, wired as
// the scenario backend of scenarios/ensemble.go) and runs inside the
// class's bubble, as the project's own recipes do
// (algorithms/zklock/gozk). The ensemble's servers are hosts zk1…zkN, so
// every generator class acts on it: pauses and crashes of clients,
// dropped and delayed frames (a lost frame resets the connection, as TCP
// does), server crashes and restarts, partitions, clock faults on the
// servers (ZooKeeper times sessions with a monotonic clock, so those fire
// and change nothing; the run's warnings say so).
//
//	locktest.RunZooKeeper(t, func(conn *zk.Conn) locktest.Lock {
//		l := zk.NewLock(conn, "/lock", zk.WorldACL(zk.PermAll))
//		return locktest.Funcs{
//			LockFunc:   func(context.Context) error { return l.Lock() },
//			UnlockFunc: func(context.Context) error { return l.Unlock() },
//		}
//	}, locktest.Options{TTL: 6 * time.Second})

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/zklock/gozk"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
)

// ZooKeeperFactory builds one client's lock on its go-zookeeper
// connection to the simulated ensemble. It is called once per client per
// run, from the client's first Lock (outside the kernel, where the
// library's goroutines live); the ensemble closes the connection when
// the run ends.
type ZooKeeperFactory func(conn *zk.Conn) Lock

// ZooKeeper sets up the simulated ensemble of RunZooKeeper.
type ZooKeeper struct {
	// Params are the ensemble's params, as in a scenario file
	// (scenarios/ensemble.go): zk_servers (1, 3 or 5; default 3),
	// session_timeout (default Options.TTL), election_time, tick_time,
	// sync_limit, apply_lag. Unknown keys and bad values fail the test
	// with a did-you-mean.
	Params map[string]string
}

// customZooKeeper is the hidden algorithm a ZooKeeper lock's runs (and
// failfiles) name, as algorithms.Custom is a user's lock on Redis.
const customZooKeeper = "custom-zookeeper"

func init() {
	algorithms.Register(algorithms.Info{
		Name:    customZooKeeper,
		Summary: "your own lock on the ZooKeeper ensemble, supplied by a factory in Go (locktest)",
		Backend: gozk.Backend, Bubble: true, Hidden: true,
		New: func(algorithms.Params, algorithms.Conns) (algorithms.Lock, error) {
			return nil, errors.New("a custom ZooKeeper lock is built by a factory in Go; use locktest.RunZooKeeper")
		},
	})
}

// RunZooKeeper tests a lock built on go-zookeeper as Run tests a Redis
// lock: one subtest per fault class (every generator class; Stall and
// Failover are Redis's), each judged against opt.Expect, counterexamples
// shrunk, saved as failfiles and replayed. Options.TTL is the session
// timeout the clients ask for (params session_timeout overrides it): a
// ZooKeeper lock is held while its holder's session lives, so the work
// may outlast it, and pauses and delays are scaled to it.
func RunZooKeeper(t *testing.T, f ZooKeeperFactory, opt Options) {
	t.Helper()
	if f == nil {
		t.Fatal("locktest: RunZooKeeper: the factory is nil")
	}
	if err := opt.refuseForeign(routeZooKeeper); err != nil {
		t.Fatal(err)
	}
	for _, c := range opt.Classes {
		if c == Stall || c == Failover {
			t.Fatalf("locktest: Options.Classes: %s is a class of Redis locks; a ZooKeeper lock's classes are %v", c, faults.Classes())
		}
	}
	if len(opt.Classes) == 0 {
		opt.Classes = faults.Classes()
	}
	if opt.Nodes > 1 || opt.Replicas > 0 || opt.Persistence != "" || opt.Fencing {
		t.Fatal(`locktest: Options.Nodes, Replicas, Persistence and Fencing describe Redis locks; for ZooKeeper use Options.ZooKeeper.Params{"zk_servers": "5"}`)
	}
	opt.Renews = true // the session's pings keep the lock; no deadline of its own
	if err := opt.defaults(); err != nil {
		t.Fatal(err)
	}
	if err := checkSerial(t); err != nil {
		t.Fatal(err)
	}
	if _, file, line, ok := runtime.Caller(1); ok {
		opt.caller = fmt.Sprintf("%s:%d", filepath.Base(file), line)
	}
	if *flagSeed != 0 {
		opt.Seed = *flagSeed
	}
	if *flagRuns > 0 {
		opt.Runs = *flagRuns
	}
	base, err := opt.zkBase()
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	for _, c := range opt.Classes {
		if err := runSubtest(t, string(c), func(t *testing.T) { runClass(t, zkBuilder{f}, opt, base, c) }); err != nil {
			t.Fatal(err)
		}
	}
}

// zkBase is the setup every run of RunZooKeeper starts from.
func (o *Options) zkBase() (*scenarios.Scenario, error) {
	sc, err := o.base()
	if err != nil {
		return nil, err
	}
	sc.Algorithm = customZooKeeper
	sc.Nodes = nil
	sc.Params = map[string]string{"session_timeout": o.TTL.String()}
	maps.Copy(sc.Params, o.ZooKeeper.Params)
	return sc, sc.Validate()
}

// zkBuilder makes a client's lock from its ZooKeeper session.
type zkBuilder struct{ f ZooKeeperFactory }

func (b zkBuilder) algorithm(ttl time.Duration, renews, fencing bool) algorithms.Factory {
	return func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
		s, ok := c.Backend.(*gozk.Session)
		if !ok || s == nil || s.Conn == nil {
			return nil, fmt.Errorf("locktest: a ZooKeeper lock needs a ZooKeeper session, got %T", c.Backend)
		}
		return &userLock{lock: &zkLock{f: b.f, conn: s.Conn}, ttl: ttl, renews: renews, fencing: fencing, mode: p.Extra[algorithms.ParamMode]}, nil
	}
}

// zkLock builds the user's lock on the client's first Lock, from the
// lock's own code.
type zkLock struct {
	f    ZooKeeperFactory
	conn *zk.Conn
	lock Lock
}

func (l *zkLock) user() Lock {
	if l.lock == nil {
		l.lock = l.f(l.conn)
	}
	return l.lock
}

func (l *zkLock) Lock(ctx context.Context) error   { return l.user().Lock(ctx) }
func (l *zkLock) Unlock(ctx context.Context) error { return l.user().Unlock(ctx) }

// LockToken and Lost pass the user's lock's own through, when it has them.
func (l *zkLock) LockToken(ctx context.Context) (int64, error) {
	if tl, ok := l.user().(TokenLock); ok {
		return tl.LockToken(ctx)
	}
	return 0, l.user().Lock(ctx)
}

func (l *zkLock) Lost() <-chan struct{} {
	if lr, ok := l.user().(LossReporter); ok {
		return lr.Lost()
	}
	return nil
}
