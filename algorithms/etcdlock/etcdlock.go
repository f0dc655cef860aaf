// Package etcdlock holds the etcd locks, run through the real, unmodified
// go.etcd.io/etcd/client/v3 and its concurrency package against the
// simulated etcd cluster of sim/etcdnode, backend "etcd".
//
// The protocol (client/v3/concurrency: session.go, mutex.go, election.go):
//
//	session:  LeaseGrant(TTL), then a keep-alive stream renewing the lease
//	          every TTL/3 (the client's lessor), until the session closes
//	acquire:  Txn(if create_revision(pfx/lease) = 0 then put pfx/lease with
//	          the lease) — the key's create revision is the waiter's place;
//	          wait until every key of pfx with a smaller create revision is
//	          deleted (a watch on the next older one), then Get(own key): if
//	          it is gone the session expired while waiting (ErrSessionExpired)
//	release:  Delete(own key)
//
// A lock's lifetime is the session's lease, measured by the leader on its
// own clock, so its known weaknesses are a lease's: a holder cut off from
// the cluster (or paused) keeps working while the leader revokes its lease
// and the next waiter acquires (etcd#10811; Jepsen's etcd 3.4.3 analysis,
// "etcd locks are not safe"). The session's Done channel closes when the
// client's keep-alive gives up, which a holder may watch
// (stop_on_session_done) — it still learns late. The fix etcd documents is
// a fencing token: the own key's create revision, which grows with every
// acquisition, checked by the protected resource (etcd-mutex-fenced).
package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/algorithms"
)

// Backend is the name of the backend these algorithms need.
const Backend = "etcd"

// Client is one client host's access to the cluster, as the backend hands
// it to an algorithm (algorithms.Conns.Backend).
type Client struct {
	// New makes a clientv3 client of the simulated cluster dialling from
	// this client's host; the run's end closes it. Call it outside the
	// kernel.
	New func() (*clientv3.Client, error)
}

var stopParam = algorithms.Param{Name: "stop_on_session_done", Expect: "true or false", Check: algorithms.BoolParam}

func init() {
	for _, a := range []struct {
		name, summary string
		election      bool
		fenced        bool
	}{
		{"etcd-mutex", "etcd's concurrency.Mutex through clientv3, in a session whose lease lives for the TTL", false, false},
		{"etcd-mutex-fenced", "etcd's concurrency.Mutex with the own key's create revision as fencing token", false, true},
		{"etcd-election", "etcd's concurrency.Election as a lock: Campaign to acquire, Resign to release", true, false},
	} {
		a := a
		// etcd-mutex-fenced numbers its leases by its key's create
		// revision (Acquire); the others hand out no token, and an etcd
		// scenario has no Redis node for token_source: incr to count on.
		fencing := algorithms.FencingNone
		if a.fenced {
			fencing = algorithms.FencingBuiltIn
		}
		algorithms.Register(algorithms.Info{
			Name: a.name, Summary: a.summary, Backend: Backend, Bubble: true, Fencing: fencing,
			Params: []algorithms.Param{stopParam},
			New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
				client, ok := c.Backend.(*Client)
				if !ok || client == nil {
					return nil, fmt.Errorf("the etcd locks need the %q backend", Backend)
				}
				stop, _ := strconv.ParseBool(p.Extra["stop_on_session_done"])
				return &Lock{client: client, prefix: "/locklab/" + p.Key, ttl: ttlSeconds(p.TTL), election: a.election, fenced: a.fenced, stop: stop}, nil
			},
		})
	}
}

// ttlSeconds is the session TTL for a lease duration: whole seconds,
// rounded up, at least 1 (etcd's server raises it to its minimum TTL).
func ttlSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// Lock is one client's etcd lock: its session (made on first use, and
// again once the previous one is done) and the mutex or election.
type Lock struct {
	client   *Client
	prefix   string
	ttl      int
	election bool
	fenced   bool
	stop     bool

	cli     *clientv3.Client
	session *concurrency.Session
	mutex   *concurrency.Mutex
	elect   *concurrency.Election
}

// outside runs fn — clientv3's code — outside the kernel when the Env has
// that door (a simulated process in a bubble), else just calls it.
func outside(env algorithms.Env, fn func()) {
	if o, ok := env.(interface{ Outside(func()) }); ok {
		o.Outside(fn)
		return
	}
	fn()
}

// notify runs fn in the kernel from a library goroutine.
func notify(env algorithms.Env, fn func()) {
	if n, ok := env.(interface{ Notify(func()) }); ok {
		n.Notify(fn)
		return
	}
	fn()
}

// acquireTimeout bounds one Lock or Campaign call: the concurrency package
// waits as long as its context lets it.
const acquireTimeout = 30 * time.Second

func (l *Lock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	var err error
	var fence int64
	outside(env, func() {
		if l.cli == nil {
			if l.cli, err = l.client.New(); err != nil {
				return
			}
		}
		if l.session == nil || isDone(l.session) {
			if l.session, err = concurrency.NewSession(l.cli, concurrency.WithTTL(l.ttl)); err != nil {
				l.session = nil
				return
			}
		}
		ctx, cancel := context.WithTimeout(env.Context(), acquireTimeout)
		defer cancel()
		if l.election {
			l.elect = concurrency.NewElection(l.session, l.prefix)
			err = l.elect.Campaign(ctx, "")
			fence = l.elect.Rev()
			return
		}
		l.mutex = concurrency.NewMutex(l.session, l.prefix)
		err = l.mutex.Lock(ctx)
		fence = createRevision(l.mutex.IsOwner())
	})
	if err != nil {
		if errors.Is(err, concurrency.ErrSessionExpired) {
			l.session = nil
		}
		return nil, err
	}
	now := env.Now()
	lease := &algorithms.Lease{Resource: l.prefix, LockValue: l.prefix, Start: now, Validity: now.Add(algorithms.NoDeadline)}
	if l.fenced {
		lease.FencingToken = fence
	}
	if l.stop {
		l.watchSession(env, lease)
	}
	return lease, nil
}

// watchSession marks the lease lost when the session's Done channel
// closes: the client's keep-alive gave up (its lease's TTL passed without
// an answer) or the lease is gone.
func (l *Lock) watchSession(env algorithms.Env, lease *algorithms.Lease) {
	done, end := l.session.Done(), env.Context().Done()
	go func() {
		select {
		case <-done:
			notify(env, lease.MarkLost)
		case <-end:
		}
	}()
}

func isDone(s *concurrency.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// createRevision is the revision a Cmp on the own key compares with: the
// key's create revision (Mutex.IsOwner).
func createRevision(c clientv3.Cmp) int64 { return c.GetCompare().GetCreateRevision() }

func (l *Lock) Release(env algorithms.Env, _ *algorithms.Lease) error {
	var err error
	outside(env, func() {
		ctx, cancel := context.WithTimeout(env.Context(), 10*time.Second)
		defer cancel()
		switch {
		case l.election && l.elect != nil:
			err = l.elect.Resign(ctx)
		case l.mutex != nil:
			err = l.mutex.Unlock(ctx)
		}
	})
	return err
}
