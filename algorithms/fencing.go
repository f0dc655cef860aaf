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
	"fmt"

	"github.com/redis/go-redis/v9"
)

// FenceKey is the counter key for a lock key.
func FenceKey(key string) string { return "fence:" + key }

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
	l.Fence = n
	return l, nil
}

// Extend passes through to the inner lock when it can be extended.
func (f *Fenced) Extend(env Env, l *Lease) error {
	if e, ok := f.Lock.(Extender); ok {
		return e.Extend(env, l)
	}
	return fmt.Errorf("lock cannot be extended")
}
