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
//
// go-zookeeper keeps one session per handle until a server says it
// expired; Curator also gives a session up on its own clock (LOST) and
// replaces its handle. replace_handle_on_lost: true (gozk-queue,
// gozk-queue-naive) does that, through Session.Replace, and a lock call
// under way goes on in the new session: the ground CURATOR-604 needs.

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
	// SessionTimeout is the session timeout the client asked for.
	SessionTimeout time.Duration
	// Settle, if set, returns once every other goroutine of the run has
	// gone as far as it can at this instant (the simulated ensemble's
	// Settle): the recipes' background retries call it (Queue.Settle).
	Settle func()
	// Notify runs fn in the kernel from a library goroutine (an event
	// callback), so what the recipe decides there is ordered with the
	// rest of the run.
	Notify func(fn func())
	// After runs fn in the kernel d from now on the world's clock, unless
	// cancel is called first. Call it in the kernel.
	After func(d time.Duration, fn func()) (cancel func())
	// Replace closes the client's current handle and opens a new one — a
	// new session — starting at the next server of the connect string:
	// what Curator does when it declares a session LOST on its own. why
	// goes to the trace. Call it in the kernel; it returns at once (the
	// old handle's Close waits up to a second for its close request) with
	// a channel that yields the new handle, or nil if the run ended first,
	// and is then closed. Session events of a replaced handle are no longer
	// reported (OnEvent hears the current handle only). The backend closes
	// each handle once, at the latest when the run ends.
	Replace func(why string) <-chan *zk.Conn
}

// forever is the Validity of a ZooKeeper lease: the lock has no deadline
// of its own, only the session's.
const forever = algorithms.NoDeadline

var stopOnDisconnectParam = algorithms.Param{Name: "stop_on_disconnect", Expect: "true or false", Check: algorithms.BoolParam}

// Curator's connection handling, which go-zookeeper does not have: after
// a connection loss (SUSPENDED) with no session back for lost_after,
// Curator's ConnectionStateManager declares the session LOST on its own
// clock, and Curator closes the ZooKeeper handle and makes a new one (a
// new session) instead of waiting for a server to say the old session
// expired — which a client cut off from the ensemble may never hear. The ensemble decides expiry on its own
// clock, rounded up to its next tick, so the client can be in a new
// session while the old one, and its ephemeral nodes, still exist: the
// window of CURATOR-604 (https://issues.apache.org/jira/browse/CURATOR-604).
//
// lost_after counts from go-zookeeper's Disconnected event, which comes
// when nothing was heard for 2/3 of the session timeout (its read
// timeout); its default, a third of the session timeout, so declares LOST
// a session timeout after the last contact.
var (
	replaceOnLostParam = algorithms.Param{Name: "replace_handle_on_lost", Expect: "true or false", Check: algorithms.BoolParam}
	lostAfterParam     = algorithms.Param{Name: "lost_after", Expect: "a duration between 1ms and 1h, such as 4s", Check: func(v string) error {
		if d, err := time.ParseDuration(v); err != nil || d < time.Millisecond || d > time.Hour {
			return errors.New("expected a duration between 1ms and 1h, such as 4s")
		}
		return nil
	}}
)

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

	// replaceOnLost: declare the session LOST after lostAfter without a
	// session and replace the handle (Curator); see replaceOnLostParam.
	replaceOnLost bool
	lostAfter     time.Duration
	// resumable: the recipe takes a replaced handle up (queueRecipe).
	resumable bool
	// lostTimer cancels the pending LOST; only touched in the kernel.
	lostTimer func()
	// conn is the handle the recipe runs on; only touched by the
	// process's calls (Acquire, Release), one at a time.
	conn *zk.Conn

	mu   sync.Mutex
	held *algorithms.Lease
	env  algorithms.Env
	// replacing are the replacements asked for and not yet taken up.
	replacing []<-chan *zk.Conn
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
	lease := &algorithms.Lease{Resource: l.key, LockValue: path, Start: now, Validity: now.Add(forever)}
	// The node's sequence number orders the holders: a later holder's
	// node was created later, so it is a fencing token the resource can
	// check (the ZooKeeper recipe's answer to a holder that outlives its
	// session). +1 so that sequence 0 is a token too.
	if seq, ok := Sequence(path); ok {
		lease.FencingToken = seq + 1
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

// connectionEvent is Curator's ConnectionStateManager on go-zookeeper's
// session events: Disconnected (SUSPENDED) starts the LOST clock if it is
// not running, a session back (HasSession, RECONNECTED) stops it. The
// clock is a kernel event, so LOST is ordered with the run's other events
// at the same instant.
func (l *ensembleLock) connectionEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateDisconnected:
		l.sess.Notify(func() {
			if l.lostTimer == nil {
				l.lostTimer = l.sess.After(l.lostAfter, l.lost)
			}
		})
	case zk.StateHasSession:
		l.sess.Notify(func() {
			if l.lostTimer != nil {
				l.lostTimer()
				l.lostTimer = nil
			}
		})
	}
}

// lost runs in the kernel when the LOST clock runs out: a holder's lease
// ends (Curator: the lock is gone with the session) and the handle is
// replaced. The recipe takes the new handle up at its next call (handle).
func (l *ensembleLock) lost() {
	l.lostTimer = nil
	ch := l.sess.Replace(fmt.Sprintf("no session for %v since the connection was lost: LOST, as Curator declares it", l.lostAfter.Round(time.Millisecond)))
	l.mu.Lock()
	lease := l.held
	l.replacing = append(l.replacing, ch)
	l.mu.Unlock()
	if lease != nil {
		lease.MarkLost()
	}
}

// handle is the handle the recipe must use now: the newest replacement,
// once it is open (it waits for it), else the one it has. Call it outside
// the kernel, from the process's calls only.
func (l *ensembleLock) handle() *zk.Conn {
	l.mu.Lock()
	chs := l.replacing
	l.replacing = nil
	l.mu.Unlock()
	for _, ch := range chs {
		if c := <-ch; c != nil {
			l.conn = c
		}
	}
	return l.conn
}

// build wires a recipe into an ensembleLock.
func build(name string, p algorithms.Params, c algorithms.Conns, recipe func(l *ensembleLock, s *Session, dir string)) (algorithms.Lock, error) {
	s, ok := c.Backend.(*Session)
	if !ok || s == nil || s.Conn == nil {
		return nil, fmt.Errorf("%s needs a ZooKeeper session (backend %s), got %T", name, Backend, c.Backend)
	}
	l := &ensembleLock{name: name, sess: s, key: p.Key, conn: s.Conn}
	if v, ok := p.Extra["stop_on_disconnect"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s: params.stop_on_disconnect: expected true or false, got %q", name, v)
		}
		l.stopOnDisconnect = b
	}
	if v, ok := p.Extra[replaceOnLostParam.Name]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s: params.%s: expected true or false, got %q", name, replaceOnLostParam.Name, v)
		}
		l.replaceOnLost = b
	}
	l.lostAfter = s.SessionTimeout / 3
	if v, ok := p.Extra[lostAfterParam.Name]; ok {
		if !l.replaceOnLost {
			return nil, fmt.Errorf("%s: params.%s is the delay before the handle is replaced; it needs params.%s: true", name, lostAfterParam.Name, replaceOnLostParam.Name)
		}
		d, err := time.ParseDuration(v)
		if err != nil || lostAfterParam.Check(v) != nil {
			return nil, fmt.Errorf("%s: params.%s: %s, got %q", name, lostAfterParam.Name, lostAfterParam.Expect, v)
		}
		l.lostAfter = d
	}
	if l.replaceOnLost {
		if s.OnEvent == nil || s.Notify == nil || s.After == nil || s.Replace == nil || l.lostAfter <= 0 {
			return nil, fmt.Errorf("%s: params.%s: the backend cannot replace a client's handle", name, replaceOnLostParam.Name)
		}
	}
	recipe(l, s, "/locks/"+p.Key)
	if l.replaceOnLost {
		if !l.resumable {
			return nil, fmt.Errorf("%s: params.%s: only the queue recipes (gozk-queue, gozk-queue-naive) go on in a new session", name, replaceOnLostParam.Name)
		}
		s.OnEvent(l.connectionEvent)
	}
	if l.stopOnDisconnect && s.OnEvent != nil {
		s.OnEvent(l.sessionEvent)
	}
	return l, nil
}

// queueRecipe makes the fixed or naive Queue on the session.
func queueRecipe(naive bool) func(l *ensembleLock, s *Session, dir string) {
	return func(l *ensembleLock, s *Session, dir string) {
		q := NewQueue(s.Conn, dir)
		q.Naive, q.Rand, q.Settle = naive, s.Rand, s.Settle
		q.Replaced = func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return len(l.replacing) > 0
		}
		l.lock = q.Lock
		l.unlock = q.Unlock
		l.resumable = true
		if l.replaceOnLost {
			// A lock call that failed because LOST closed its handle goes
			// on in the new session with the same GUID, as Curator's
			// retry loop goes on with its protected create: the lookup may
			// find the node the old session made.
			l.lock = func() (string, error) {
				for {
					path, err := q.Lock()
					if err == nil {
						return path, nil
					}
					conn := l.handle()
					if conn == q.Conn {
						return "", err
					}
					q.Resume(conn)
				}
			}
			l.unlock = func() error {
				q.Conn = l.handle()
				return q.Unlock()
			}
		}
		if s.AtEnd != nil {
			s.AtEnd(q.Stop)
		}
	}
}

func init() {
	common := []algorithms.Param{stopOnDisconnectParam}
	queue := []algorithms.Param{stopOnDisconnectParam, replaceOnLostParam, lostAfterParam}
	algorithms.Register(algorithms.Info{
		Name:    "gozk-lock",
		Summary: "go-zookeeper/zk's own Lock, unmodified, on the real client against a simulated ensemble",
		Backend: Backend,
		Fencing: algorithms.FencingNone, // no sequence node to number leases by, and no Redis node to INCR on
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
		Fencing: algorithms.FencingBuiltIn, // the queue node's sequence (ensembleLock.Acquire)
		Bubble:  true,
		Params:  queue,
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return build("gozk-queue", p, c, queueRecipe(false))
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "gozk-queue-naive",
		Summary: "ZooKeeper queue on the real client as first written: an unanswered lookup makes a second node, a lost DELETE is not retried",
		Backend: Backend,
		Fencing: algorithms.FencingBuiltIn, // the queue node's sequence (ensembleLock.Acquire)
		Bubble:  true,
		Params:  queue,
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return build("gozk-queue-naive", p, c, queueRecipe(true))
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "gozk-reentrant",
		Summary: "Curator InterProcessMutex semantics on the real client: reentrant per owner, fixed queue underneath",
		Backend: Backend,
		Fencing: algorithms.FencingBuiltIn, // the queue node's sequence (ensembleLock.Acquire)
		Bubble:  true,
		Params:  common,
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return build("gozk-reentrant", p, c, func(l *ensembleLock, s *Session, dir string) {
				r := NewReentrant(s.Conn, dir)
				r.Queue.Rand, r.Queue.Settle = s.Rand, s.Settle
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
		Fencing: algorithms.FencingNone, // no sequence node to number leases by, and no Redis node to INCR on
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
