package algorithms

// Redlock, as the Redis distributed-locks page specifies it. N independent
// masters (no replication); quorum Q = N/2 + 1.
//
//	acquire:  start = now
//	          ask every node at once:  SET key token NX PX ttl
//	              (each request with a timeout much smaller than ttl)
//	          elapsed  = now - start
//	          drift    = ttl * drift_factor + 2ms
//	          validity = ttl - elapsed - drift
//	          if granted >= Q and validity > 0: hold until start + ttl - drift
//	          else: release on EVERY node, wait a random delay, try again
//	release:  compare-and-delete on EVERY node
//
// Why every node: a SET may have succeeded although its reply was lost.
// Why subtract elapsed: the keys were set at the start, not at the end, of a
// slow acquisition (a pause while replies are in flight).
//
// Weakness (Kleppmann, "How to do distributed locking"): safety rests on the
// nodes' clocks. If one node's clock jumps forward, its key expires early and
// a second client can gather a quorum while the first still holds the lock.
// A node that restarts without persistence forgets its key the same way.
// Redlock hands out no fencing token, so the resource cannot protect itself.
//
// redlock-naive breaks the two rules above on purpose: it counts validity
// from the end of the acquisition and, on failure and on release, deletes
// only the keys of nodes that said OK.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	for _, naive := range []bool{false, true} {
		naive := naive
		name, summary := "redlock", "Redlock as specified: quorum, elapsed time and drift subtracted, release on every node"
		if naive {
			name, summary = "redlock-naive", "Redlock that ignores elapsed time and releases only where it succeeded"
		}
		Register(Info{
			Name:     name,
			Summary:  summary,
			Backend:  Backend,
			MinNodes: 3,
			Params: []Param{{Name: "drift_factor", Expect: "a number in [0, 1), such as 0.01", Check: func(v string) error {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || f < 0 || f >= 1 {
					return errors.New("expected a number in [0, 1), such as 0.01")
				}
				return nil
			}}},
			New: func(p Params, c Conns) (Lock, error) {
				if err := needNodes(c, 3, name); err != nil {
					return nil, err
				}
				r := &Redlock{Clients: c.Redis, Params: p, Naive: naive, DriftPPM: 10_000}
				if f, ok := p.Extra["drift_factor"]; ok {
					v, err := strconv.ParseFloat(f, 64)
					if err != nil || v < 0 || v >= 1 {
						return nil, fmt.Errorf("%s: drift_factor: expected a number in [0, 1), got %q", name, f)
					}
					r.DriftPPM = int64(v*1e6 + 0.5)
				}
				return r, nil
			},
		})
	}
}

// Redlock is the multi-master lock.
type Redlock struct {
	Clients []*redis.Client
	Params  Params
	Naive   bool
	// DriftPPM is the clock drift factor in parts per million (0.01 = 10000).
	DriftPPM int64
}

// Quorum is N/2 + 1.
func (r *Redlock) Quorum() int { return len(r.Clients)/2 + 1 }

func (r *Redlock) drift() time.Duration {
	return time.Duration(int64(r.Params.TTL)/1_000_000*r.DriftPPM+int64(r.Params.TTL)%1_000_000*r.DriftPPM/1_000_000) + 2*time.Millisecond
}

func nodeName(c *redis.Client) string { return c.Options().Addr }

// Acquire asks every node in parallel and decides by quorum and validity.
func (r *Redlock) Acquire(env Env) (*Lease, error) {
	return r.Params.Wait.Retry(env, func() (*Lease, error) {
		tok := token(env)
		start := env.Now()
		granted := r.everyNode(env, func(e Env, c *redis.Client) bool {
			return c.SetArgs(e.Context(), r.Params.Key, tok, redis.SetArgs{Mode: "NX", TTL: r.Params.TTL}).Err() == nil
		})
		var nodes []string
		for i, ok := range granted {
			if ok {
				nodes = append(nodes, nodeName(r.Clients[i]))
			}
		}
		lease := &Lease{Resource: r.Params.Key, LockValue: tok, Start: start, Nodes: nodes}
		if r.Naive {
			if len(nodes) >= r.Quorum() {
				lease.Validity = env.Now().Add(r.Params.TTL)
				return lease, nil
			}
			r.Release(env, lease) // only where it knows it succeeded
			return nil, ErrNotAcquired
		}
		elapsed := env.Now().Sub(start)
		validity := r.Params.TTL - elapsed - r.drift()
		if len(nodes) >= r.Quorum() && validity > 0 {
			lease.Validity = start.Add(r.Params.TTL - r.drift())
			return lease, nil
		}
		lease.Nodes = nil // release on every node, not only where it said OK
		r.Release(env, lease)
		return nil, ErrNotAcquired
	})
}

// Release runs compare-and-delete on every node (the naive variant: only on
// the nodes recorded in the lease).
func (r *Redlock) Release(env Env, lease *Lease) error {
	targets := r.Clients
	if r.Naive {
		targets = nil
		for _, c := range r.Clients {
			for _, n := range lease.Nodes {
				if nodeName(c) == n {
					targets = append(targets, c)
				}
			}
		}
	}
	sub := &Redlock{Clients: targets, Params: r.Params}
	sub.everyNode(env, func(e Env, c *redis.Client) bool {
		return c.Eval(e.Context(), compareAndDelete, []string{lease.Resource}, lease.LockValue).Err() == nil
	})
	return nil
}

// Extend pushes the expiry on every node; it succeeds with a quorum.
func (r *Redlock) Extend(env Env, lease *Lease) error {
	ms := strconv.FormatInt(r.Params.TTL.Milliseconds(), 10)
	ok := r.everyNode(env, func(e Env, c *redis.Client) bool {
		n, err := c.Eval(e.Context(), compareAndPExpire, []string{lease.Resource}, lease.LockValue, ms).Int()
		return err == nil && n == 1
	})
	count := 0
	for _, b := range ok {
		if b {
			count++
		}
	}
	if count < r.Quorum() {
		return errors.New("redlock: extension reached no quorum")
	}
	return nil
}

// everyNode runs op against every node at once and reports which succeeded.
func (r *Redlock) everyNode(env Env, op func(Env, *redis.Client) bool) []bool {
	ok := make([]bool, len(r.Clients))
	fns := make([]func(Env), len(r.Clients))
	for i, c := range r.Clients {
		fns[i] = func(e Env) { ok[i] = op(e, c) }
	}
	env.Parallel(fns...)
	return ok
}
