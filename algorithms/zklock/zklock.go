// Package zklock holds the ZooKeeper lock recipes locklab puts under test,
// registered with Backend "zookeeper". They talk to the simulated ensemble
// (package sim/zk) through a client shaped after go-zookeeper, and learn of
// connection trouble through Curator's connection states.
//
// A ZooKeeper lock has no deadline: it is held while the holder's session
// lives, so a lease's Validity is far in the future and the holder's belief
// ends only when the connection state says so (lease.MarkLost): on LOST,
// or already on SUSPENDED with stop_on_suspended. Between the server
// expiring a session and its client hearing about it lies the gap every
// scenario of this package is about.
//
// Options (Params.Extra):
//
//	guid_protection: "true" | "false"  zk-queue: Curator's protected names (default true)
//	stop_on_suspended: "true" | "false" stop acting as holder on SUSPENDED, not LOST (default false)
//	fencing: "none" | "sequence" | "zxid"  put the node's sequence number + 1, or its
//	                                       creation zxid, in Lease.Fence (default none)
//
// Session settings (session_timeout, lost_after) belong to the connection,
// which the scenario's backend makes.
package zklock

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/sim/zk"
)

func init() {
	algorithms.Register(algorithms.Info{
		Name:    "zk-simple",
		Summary: "ZooKeeper ephemeral node, every waiter watches it",
		Backend: "zookeeper",
		Params:  []algorithms.Param{stopOnSuspendedParam, {Name: "fencing", Expect: "none or zxid", Check: algorithms.OneOf("none", "zxid")}},
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			conn, opt, err := setup("zk-simple", p, c)
			if err != nil {
				return nil, err
			}
			if opt.fencing == FenceSequence {
				return nil, fmt.Errorf("zk-simple: params.fencing: sequence needs sequential nodes; use zxid")
			}
			return NewSimple(conn, "/"+p.Key, opt.stopOnSuspended, opt.fencing), nil
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "zk-queue-naive",
		Summary: "ZooKeeper queue as first written: an unanswered GUID lookup makes a second node, a lost DELETE is not retried",
		Backend: "zookeeper",
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			conn, opt, err := setup("zk-queue-naive", p, c)
			if err != nil {
				return nil, err
			}
			q := NewQueue(conn, "/locks/"+p.Key)
			q.Protected, q.StopOnSuspended, q.Fencing = opt.guidProtection, opt.stopOnSuspended, opt.fencing
			q.Backoff = p.Wait.Delay
			q.LookupRetry, q.GuaranteedDelete = false, false
			return q, nil
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "zk-queue",
		Summary: "ZooKeeper ephemeral-sequential queue (Curator InterProcessMutex: protected lookup retried, guaranteed delete)",
		Backend: "zookeeper",
		Params: []algorithms.Param{
			{Name: "guid_protection", Expect: "true or false", Check: algorithms.BoolParam},
			stopOnSuspendedParam,
			{Name: "fencing", Expect: "none, sequence or zxid", Check: algorithms.OneOf("none", "sequence", "zxid")},
		},
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			conn, opt, err := setup("zk-queue", p, c)
			if err != nil {
				return nil, err
			}
			q := NewQueue(conn, "/locks/"+p.Key)
			q.Protected, q.StopOnSuspended, q.Fencing = opt.guidProtection, opt.stopOnSuspended, opt.fencing
			q.Backoff = p.Wait.Delay
			return q, nil
		},
	})
}

var stopOnSuspendedParam = algorithms.Param{Name: "stop_on_suspended", Expect: "true or false", Check: algorithms.BoolParam}

// Fencing says what a lease carries as its fencing token.
type Fencing string

const (
	FenceNone     Fencing = "none"
	FenceSequence Fencing = "sequence" // the node's sequence number + 1 (0 means "no token")
	FenceZxid     Fencing = "zxid"     // the zxid that created the node
)

// forever is a ZooKeeper lease's validity: the session, not a clock, ends it.
const forever = algorithms.NoDeadline

type options struct {
	guidProtection  bool
	stopOnSuspended bool
	fencing         Fencing
}

func setup(name string, p algorithms.Params, c algorithms.Conns) (*zk.Conn, options, error) {
	conn, ok := c.Backend.(*zk.Conn)
	if !ok || conn == nil {
		return nil, options{}, fmt.Errorf("%s needs a ZooKeeper connection (backend zookeeper), got %T", name, c.Backend)
	}
	opt := options{guidProtection: true, fencing: FenceNone}
	var err error
	if opt.guidProtection, err = boolParam(p.Extra, "guid_protection", true); err != nil {
		return nil, opt, fmt.Errorf("%s: %w", name, err)
	}
	if opt.stopOnSuspended, err = boolParam(p.Extra, "stop_on_suspended", false); err != nil {
		return nil, opt, fmt.Errorf("%s: %w", name, err)
	}
	if v, ok := p.Extra["fencing"]; ok {
		switch f := Fencing(v); f {
		case FenceNone, FenceSequence, FenceZxid:
			opt.fencing = f
		default:
			return nil, opt, fmt.Errorf("%s: params.fencing: expected none, sequence or zxid, got %q", name, v)
		}
	}
	return conn, opt, nil
}

func boolParam(extra map[string]string, key string, def bool) (bool, error) {
	v, ok := extra[key]
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("params.%s: expected true or false, got %q", key, v)
	}
	return b, nil
}

// holder ties the current lease to the connection state, as Curator asks
// every lock user to do with a ConnectionStateListener: on LOST the lock is
// gone; on SUSPENDED it may be (the session may expire on the server
// before the client hears anything), and a careful holder stops there.
type holder struct {
	lease *algorithms.Lease
}

// lostOn says whether state s ends a lease.
func lostOn(s zk.State, stopOnSuspended bool) bool {
	return s == zk.Lost || (s == zk.Suspended && stopOnSuspended)
}

func (h *holder) stateChanged(s zk.State, stopOnSuspended bool) {
	if h.lease != nil && lostOn(s, stopOnSuspended) {
		h.lease.MarkLost()
	}
}

func (h *holder) grant(l *algorithms.Lease, conn *zk.Conn, stopOnSuspended bool) *algorithms.Lease {
	h.lease = l
	if lostOn(conn.State(), stopOnSuspended) {
		l.MarkLost() // acquired while the connection was already down
	}
	return l
}

func (h *holder) release(l *algorithms.Lease) {
	if h.lease == l {
		h.lease = nil
	}
}

// bySequence sorts lock node names by their sequence suffix, ignoring any
// protection prefix (Curator's fixForSorting).
func bySequence(names []string) {
	sort.SliceStable(names, func(i, j int) bool {
		a, _ := zk.Sequence(names[i])
		b, _ := zk.Sequence(names[j])
		if a != b {
			return a < b
		}
		return names[i] < names[j]
	})
}

// guid is Curator's protection id: a random UUID drawn from the client's
// random source.
func guid(env algorithms.Env) string {
	r := env.Rand()
	hi, lo := r.Uint64(), r.Uint64()
	hi = hi&^(0xf<<12) | 0x4<<12 // version 4
	lo = lo&^(0x3<<62) | 0x2<<62 // RFC 4122 variant
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, (hi>>16)&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
}
