package algorithms

// Fencing tokens (Kleppmann, "How to do distributed locking"):
//
//	acquire:  take the lock, then  INCR fence:key  -> token
//	write:    the storage accepts a write only if its token is higher than
//	          every token it has seen (>); it remembers the highest.
//
// A client that lost its lock without knowing it (a GC pause, a slow
// network) comes back with an old token, and the storage turns it away.
// Two weaknesses remain and have scenarios of their own: the counter must
// itself never go backwards (an INCR on a Redis master that fails over
// before replicating hands out the same token twice), and a storage that
// accepts equal tokens (>=) lets such duplicates through.

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// FenceKey is the counter key for a lock key.
func FenceKey(key string) string { return "fence:" + key }

// How an algorithm's leases get fencing tokens (Info.Fencing).
const (
	// FencingDecorator: the lock hands out none itself; Build's
	// token_source: incr wraps it in Fenced, which takes one INCR per grant
	// (every Redis algorithm of this package).
	FencingDecorator = ""
	// FencingBuiltIn: the algorithm fences its own leases (a znode's
	// sequence, a fence row's version, a revision), by a param of its
	// own; Build never adds an INCR, which would be a second token per
	// grant.
	FencingBuiltIn = "built in"
	// FencingNone: its leases carry no fencing token, and
	// token_source: incr is refused.
	FencingNone = "none"
)

// ParamTokenSource is the param that says where a lease's fencing token
// comes from: "incr" (Build's Fenced, an INCR on the Redis counter), "table"
// (a database's fence row), "file" (a counter file) or "none". It was
// spelled "fencing" before, which read as the store's rule; that rule is
// the scenario file's resource.token_check (docs/scenario-format.md).
const ParamTokenSource = "token_source"

// FenceStart is the param that gives the fencing counter its value before
// the run (Kleppmann's example starts at 33): every algorithm accepts it.
var FenceStart = Param{Name: "fence_start", Expect: "a whole number >= 0, the fencing counter's first value", Check: func(v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || n > 1<<53 {
		return errors.New("expected a whole number >= 0, such as 32")
	}
	return nil
}}

// FenceCounter is the node the fencing counter lives on: the tokens node
// when there is one, else the first lock node (false: neither). Build's
// token_source: incr takes its tokens there, and a run seeds fence_start there
// (FenceSeed).
func FenceCounter[N comparable](tokens N, lock []N) (N, bool) {
	var none N
	if tokens != none {
		return tokens, true
	}
	if len(lock) > 0 {
		return lock[0], true
	}
	return none, false
}

// FenceSeed is the command that writes params.fence_start (extra) into the
// counter of lock key, to run on its FenceCounter node before the run, as a
// client's write is (so it is in the node's AOF, and replicas get it from
// their initial synchronisation); false without fence_start.
func FenceSeed(key string, extra map[string]string) ([]string, bool) {
	start, ok := extra[FenceStart.Name]
	if !ok {
		return nil, false
	}
	return []string{"SET", FenceKey(key), start}, true
}

// Fenced adds a fencing token to every lease of Lock.
type Fenced struct {
	Lock
	Tokens *redis.Client
	Key    string
}

// Acquire takes the lock, then a token. Without a token the lease is useless
// to a fenced resource, so the lock is given back.
func (f *Fenced) Acquire(env Env) (*Lease, error) {
	l, err := f.Lock.Acquire(env)
	if err != nil {
		return nil, err
	}
	n, err := f.Tokens.Incr(env.Context(), f.Key).Result()
	if err != nil {
		f.Lock.Release(env, l)
		return nil, fmt.Errorf("fencing token: %w", err)
	}
	l.FencingToken = n
	return l, nil
}

// Extend passes through to the inner lock when it can be extended.
func (f *Fenced) Extend(env Env, l *Lease) error {
	if e, ok := f.Lock.(Extender); ok {
		return e.Extend(env, l)
	}
	return fmt.Errorf("lock cannot be extended")
}
