package algorithms

// Redlock acquired node by node, as the classic write-ups describe it: the
// client asks the N instances one after another, "in order", each request
// bounded by a per-request timeout much shorter than the TTL (the go-redis
// read timeout, clients.timeout: tens of ms) after which it moves on to the
// next instance. Quorum Q = N/2 + 1.
//
//	acquire:  start = now
//	          for each node in order:  SET key value NX PX ttl   (or EX secs)
//	              (no reply within the per-request timeout: not granted)
//	          elapsed = now - start
//	          validity rule "spec" (the default, as redlock.go):
//	              drift = ttl * drift_factor + 2ms
//	              ok = count >= Q and ttl - elapsed - drift > 0
//	              hold until start + ttl - drift
//	          validity rule "third-whole-seconds" (the widely copied wiki
//	          version; integer arithmetic on milliseconds and seconds):
//	              ok = count >= Q and elapsed_ms/1000 <= ttl_s/3
//	              hold for the full ttl from the end of the acquisition
//	          if not ok: unlock (node by node), wait, try again
//	release:  compare-and-delete on every node, node by node
//
// Weaknesses this file lets scenarios show:
//   - Sequential requests add up: each slow node costs a whole per-request
//     timeout, so a couple of slow nodes can eat the validity that asking
//     in parallel (redlock.go) keeps (redlock-sequential-slow-nodes).
//   - The wiki's rule truncates: elapsed_ms/1000 drops up to 999 ms, and
//     ttl_s/3 rounds the allowance down, so an acquisition that took well
//     over a third of the TTL passes; holding the full TTL from the end
//     of the acquisition then outlives the keys set at its start
//     (redlock-wiki-truncated-validity).
//
// Params (each the rule of one write-up; the defaults are the spec's):
//
//	validity:           spec | third-whole-seconds
//	ex_seconds:         true: SET NX EX with the TTL in whole seconds
//	                    (ttl_ms/1000, truncated, as the wiki computes it)
//	unlock_on_failure:  every-node (spec: a SET may have succeeded although
//	                    its reply was lost) | if-any-granted (the wiki:
//	                    only when count > 0)
//	drift_factor:       as redlock.go (spec validity only)
//
// The wiki version retries every 100 ms: that is the scenario's wait policy
// (wait: {delay: 100ms}), not a param.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Validity rules of redlock-sequential.
const (
	ValiditySpec              = "spec"
	ValidityThirdWholeSeconds = "third-whole-seconds"
)

// Unlock-on-failure rules of redlock-sequential.
const (
	UnlockEveryNode    = "every-node"
	UnlockIfAnyGranted = "if-any-granted"
)

func init() {
	Register(Info{
		Name:     "redlock-sequential",
		Summary:  "Redlock asking node by node with a per-request timeout (validity: spec or the wiki's third-whole-seconds)",
		Backend:  Backend,
		MinNodes: 3,
		Params: []Param{
			{Name: "validity", Expect: "spec or third-whole-seconds", Check: OneOf(ValiditySpec, ValidityThirdWholeSeconds)},
			{Name: "ex_seconds", Expect: "true or false", Check: BoolParam},
			{Name: "unlock_on_failure", Expect: "every-node or if-any-granted", Check: OneOf(UnlockEveryNode, UnlockIfAnyGranted)},
			{Name: "drift_factor", Expect: "a number in [0, 1), such as 0.01", Check: driftFactor},
		},
		New: newRedlockSequential,
	})
}

func driftFactor(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f >= 1 {
		return errors.New("expected a number in [0, 1), such as 0.01")
	}
	return nil
}

func newRedlockSequential(p Params, c Conns) (Lock, error) {
	const name = "redlock-sequential"
	if err := needNodes(c, 3, name); err != nil {
		return nil, err
	}
	r := &RedlockSequential{Clients: c.Redis, Params: p, DriftPPM: 10_000, Validity: ValiditySpec, Unlock: UnlockEveryNode}
	if v, ok := p.Extra["validity"]; ok {
		r.Validity = v
	}
	if v, ok := p.Extra["unlock_on_failure"]; ok {
		r.Unlock = v
	}
	if v, ok := p.Extra["ex_seconds"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s: ex_seconds: expected true or false, got %q", name, v)
		}
		r.ExSeconds = b
	}
	if r.ExSeconds && p.TTL < time.Second {
		return nil, fmt.Errorf("%s: ex_seconds: the ttl %v is 0 whole seconds; expected a ttl of at least 1s", name, p.TTL)
	}
	if f, ok := p.Extra["drift_factor"]; ok {
		if err := driftFactor(f); err != nil {
			return nil, fmt.Errorf("%s: drift_factor: %v, got %q", name, err, f)
		}
		v, _ := strconv.ParseFloat(f, 64)
		r.DriftPPM = int64(v*1e6 + 0.5)
	}
	return r, nil
}

// RedlockSequential is Redlock asking its nodes one after another.
type RedlockSequential struct {
	// Clients, Params and DriftPPM as Redlock's; it is not an Extender
	// (no watchdog: the write-ups renew nothing).
	Clients  []*redis.Client
	Params   Params
	DriftPPM int64
	// Validity is ValiditySpec or ValidityThirdWholeSeconds.
	Validity string
	// ExSeconds sets the keys with EX and the TTL's whole seconds.
	ExSeconds bool
	// Unlock is UnlockEveryNode or UnlockIfAnyGranted.
	Unlock string
}

func (r *RedlockSequential) spec() *Redlock {
	return &Redlock{Clients: r.Clients, Params: r.Params, DriftPPM: r.DriftPPM}
}

// expiry is the time to live the SET gives the keys: the TTL, or its whole
// seconds (ttl_ms/1000) under ex_seconds.
func (r *RedlockSequential) expiry() time.Duration {
	if r.ExSeconds {
		return r.Params.TTL.Truncate(time.Second)
	}
	return r.Params.TTL
}

// Acquire asks node by node, then decides by quorum and the validity rule.
func (r *RedlockSequential) Acquire(env Env) (*Lease, error) {
	return r.Params.Wait.Retry(env, func() (*Lease, error) {
		tok := token(env)
		start := env.Now()
		var nodes []string
		for _, c := range r.Clients {
			// go-redis sends EX for a whole number of seconds and PX
			// otherwise; under ex_seconds the TTL is whole seconds.
			err := c.SetArgs(env.Context(), r.Params.Key, tok, redis.SetArgs{Mode: "NX", TTL: r.expiry()}).Err()
			if err == nil {
				nodes = append(nodes, nodeName(c))
			}
		}
		lease := &Lease{Resource: r.Params.Key, LockValue: tok, Start: start, Nodes: nodes}
		now := env.Now()
		elapsed := now.Sub(start)
		if len(nodes) >= r.spec().Quorum() {
			switch r.Validity {
			case ValidityThirdWholeSeconds:
				if elapsed.Milliseconds()/1000 <= int64(r.expiry()/time.Second)/3 {
					lease.Validity = now.Add(r.expiry())
					return lease, nil
				}
			default:
				if r.Params.TTL-elapsed-r.spec().drift() > 0 {
					lease.Validity = start.Add(r.Params.TTL - r.spec().drift())
					return lease, nil
				}
			}
		}
		if r.Unlock == UnlockEveryNode || len(nodes) > 0 {
			r.Release(env, lease)
		}
		return nil, ErrNotAcquired
	})
}

// Release runs compare-and-delete on every node, one after another.
func (r *RedlockSequential) Release(env Env, lease *Lease) error {
	for _, c := range r.Clients {
		c.Eval(env.Context(), compareAndDelete, []string{lease.Resource}, lease.LockValue)
	}
	return nil
}
