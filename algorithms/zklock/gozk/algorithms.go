package gozk

// The recipes of this package, and go-zookeeper's own Lock, registered as
// algorithms for scenario files (backend "zookeeper-ensemble"): each
// client gets an unmodified *zk.Conn dialled into the simulated ensemble
// (sim/zk/ensemble) and the lock runs on it as it would against a real
// ZooKeeper. The library starts goroutines and sleeps on timers, so these
// algorithms run in the bubble runtime (Info.Bubble) and every call into
// the library goes through the Env's Outside door: the simulated process
// gives the kernel up while the library works, so the library's own
// goroutines (its send and receive loops) can enter it.
//
// A ZooKeeper lock has no deadline: it is held while the holder's session
// lives. What ends a holder's belief is what its connection tells it. The
// library's users mostly ignore that (stop_on_disconnect: false, the
// default): they hold until they release. Curator's advice for lock
// holders is to stop acting on SUSPENDED — the connection dropped, the
// session may expire any moment — which go-zookeeper reports as
// StateDisconnected; stop_on_disconnect: true marks the lease lost on
// Disconnected or Expired.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/algorithms"
)

// Backend is the name of the backend these algorithms need.
const Backend = "zookeeper-ensemble"

// Session is one client's ZooKeeper session as the backend hands it to an
// algorithm (algorithms.Conns.Backend).
type Session struct {
	// Conn is the unmodified go-zookeeper client.
	Conn *zk.Conn
	// OnEvent registers fn to hear every session event of Conn
	// (Connecting, Connected, HasSession, Disconnected, Expired). fn runs
	// on the library's goroutine; it must not block.
	OnEvent func(fn func(zk.Event))
	// AtEnd registers fn to run when the run ends, while the backend
	// closes Conn: the recipe stops its background work there (guaranteed
	// deletes), which would otherwise retry for ever.
	AtEnd func(fn func())
	// Rand is the seeded source of the recipes' GUIDs, so node names, and
	// so traces, replay byte for byte.
	Rand io.Reader
}

// forever is the Validity of a ZooKeeper lease: the lock has no deadline
// of its own, only the session's.
const forever = 100 * 365 * 24 * time.Hour

var stopOnDisconnectParam = algorithms.Param{Name: "stop_on_disconnect", Expect: "true or false", Check: algorithms.BoolParam}

// ensembleLock is what the five algorithms share: the session, the key,
// and the stop-on-disconnect policy. inner is the recipe, behind two
// calls made outside the kernel.
type ensembleLock struct {
	name             string
	sess             *Session
	key              string
	stopOnDisconnect bool
	lock             func() (path string, err error)
	unlock           func() error

	mu   sync.Mutex
	held *algorithms.Lease
	env  algorithms.Env
}

// outside runs fn — library code — outside the kernel when the Env has
// that door (a simulated process in a bubble), else just calls it.
func outside(env algorithms.Env, fn func()) {
	if o, ok := env.(interface{ Outside(func()) }); ok {
		o.Outside(fn)
		return
	}
	fn()
}

// notify runs fn inside the kernel from a library goroutine.
func notify(env algorithms.Env, fn func()) {
	if n, ok := env.(interface{ Notify(func()) }); ok {
		n.Notify(fn)
		return
	}
	fn()
}

func (l *ensembleLock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	var path string
	var err error
	outside(env, func() { path, err = l.lock() })
	if err != nil {
		return nil, err
	}
	now := env.Now()
	lease := &algorithms.Lease{Resource: l.key, Token: path, Start: now, Validity: now.Add(forever)}
	// The node's sequence number orders the holders: a later holder's
	// node was created later, so it is a fencing token the resource can
	// check (the ZooKeeper recipe's answer to a holder that outlives its
	// session). +1 so that sequence 0 is a token too.
	if seq, ok := Sequence(path); ok {
		lease.Fence = seq + 1
	}
	l.mu.Lock()
	l.held, l.env = lease, env
	l.mu.Unlock()
	return lease, nil
}

func (l *ensembleLock) Release(env algorithms.Env, lease *algorithms.Lease) error {
	l.mu.Lock()
	if l.held == lease {
		l.held = nil
	}
	l.mu.Unlock()
	var err error
	outside(env, func() { err = l.unlock() })
	return err
}

// sessionEvent is the library's callback: with stop_on_disconnect, a
// connection that drops (SUSPENDED in Curator's words) or a session that
// expired ends the current holder's belief, in the kernel, at the instant
// the library reports it.
func (l *ensembleLock) sessionEvent(ev zk.Event) {
	if ev.Type != zk.EventSession || (ev.State != zk.StateDisconnected && ev.State != zk.StateExpired) {
		return
	}
	l.mu.Lock()
	lease, env := l.held, l.env
	l.mu.Unlock()
	if lease == nil {
		return
	}
	notify(env, func() {
		l.mu.Lock()
		current := l.held == lease
		l.mu.Unlock()
		if current {
			lease.MarkLost()
		}
	})
}

// build wires a recipe into an ensembleLock.
func build(name string, p algorithms.Params, c algorithms.Conns, recipe func(l *ensembleLock, s *Session, dir string)) (algorithms.Lock, error) {
	s, ok := c.Backend.(*Session)
	if !ok || s == nil || s.Conn == nil {
		return nil, fmt.Errorf("%s needs a ZooKeeper session (backend %s), got %T", name, Backend, c.Backend)
	}
	l := &ensembleLock{name: name, sess: s, key: p.Key}
	if v, ok := p.Extra["stop_on_disconnect"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s: params.stop_on_disconnect: expected true or false, got %q", name, v)
		}
		l.stopOnDisconnect = b
	}
	if l.stopOnDisconnect && s.OnEvent != nil {
		s.OnEvent(l.sessionEvent)
	}
	recipe(l, s, "/locks/"+p.Key)
	return l, nil
}

// queueRecipe makes the fixed or naive Queue on the session.
func queueRecipe(naive bool) func(l *ensembleLock, s *Session, dir string) {
	return func(l *ensembleLock, s *Session, dir string) {
		q := NewQueue(s.Conn, dir)
		q.Naive, q.Rand = naive, s.Rand
		l.lock = q.Lock
		l.unlock = q.Unlock
		if s.AtEnd != nil {
			s.AtEnd(q.Stop)
		}
	}
}

func init() {
	common := []algorithms.Param{stopOnDisconnectParam}
	algorithms.Register(algorithms.Info{
		Name:    "gozk-lock",
		Summary: "go-zookeeper/zk's own Lock, unmodified, on the real client against a simulated ensemble",
		Backend: Backend,
		Bubble:  true,
		Params:  common,
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return build("gozk-lock", p, c, func(l *ensembleLock, s *Session, dir string) {
				// zk.Lock keeps the path of its node to itself; the
				// lease's token and fence stay empty.
				zl := zk.NewLock(s.Conn, dir, zk.WorldACL(zk.PermAll))
				l.lock = func() (string, error) { return "", zl.Lock() }
				l.unlock = zl.Unlock
			})
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "gozk-queue",
		Summary: "ZooKeeper queue on the real client, fixed as Curator's InterProcessMutex: protected create and lookup, guaranteed delete",
		Backend: Backend,
		Bubble:  true,
		Params:  common,
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return build("gozk-queue", p, c, queueRecipe(false))
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "gozk-queue-naive",
		Summary: "ZooKeeper queue on the real client as first written: an unanswered lookup makes a second node, a lost DELETE is not retried",
		Backend: Backend,
		Bubble:  true,
		Params:  common,
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return build("gozk-queue-naive", p, c, queueRecipe(true))
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "gozk-reentrant",
		Summary: "Curator InterProcessMutex semantics on the real client: reentrant per owner, fixed queue underneath",
		Backend: Backend,
		Bubble:  true,
		Params:  common,
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return build("gozk-reentrant", p, c, func(l *ensembleLock, s *Session, dir string) {
				r := NewReentrant(s.Conn, dir)
				r.Queue.Rand = s.Rand
				// Each cycle takes the lock twice, as code that calls a
				// locked helper while holding it does: the second acquire
				// must not touch ZooKeeper, and only the last release
				// deletes the node.
				const owner = "worker"
				l.lock = func() (string, error) {
					if err := r.Lock(owner); err != nil {
						return "", err
					}
					if err := r.Lock(owner); err != nil {
						return "", err
					}
					return r.Queue.Path(), nil
				}
				l.unlock = func() error {
					if err := r.Unlock(owner); err != nil {
						return err
					}
					if r.Queue.Path() == "" {
						return errors.New("gozk-reentrant: the inner release deleted the node")
					}
					return r.Unlock(owner)
				}
				if s.AtEnd != nil {
					s.AtEnd(r.Queue.Stop)
				}
			})
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "gozk-simple",
		Summary: "one ephemeral node every waiter watches, on the real client (the herd effect)",
		Backend: Backend,
		Bubble:  true,
		Params:  common,
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return build("gozk-simple", p, c, func(l *ensembleLock, s *Session, dir string) {
				// The lock is the node /locks/<key> itself.
				sl := NewSimple(s.Conn, dir)
				l.lock = func() (string, error) { return "", sl.Lock() }
				l.unlock = sl.Unlock
			})
		},
	})
}
