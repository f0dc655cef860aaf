package algorithms

// The naive lock, as found in countless blog posts:
//
//	acquire:  SETNX key token        -- 1 if we got it
//	          EXPIRE key ttl         -- so a dead holder cannot block forever
//	release:  DEL key
//
// Weakness: acquire is two round trips, not one atomic step. If the client
// dies (or the EXPIRE is lost) between SETNX and EXPIRE, the key has no TTL
// and nobody can ever take the lock again. Fix: SET key token NX PX ttl,
// which sets the value and its expiry atomically (setnxpx.go).

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:     "setnx-expire",
		Summary:  "naive SETNX then EXPIRE, plain DEL release",
		Backend:  Backend,
		MinNodes: 1,
		New: func(p Params, c Conns) (Lock, error) {
			if err := needNodes(c, 1, "setnx-expire"); err != nil {
				return nil, err
			}
			return &SetNXExpire{Client: c.Redis[0], Params: p}, nil
		},
	})
}

// SetNXExpire is the naive two-step lock.
type SetNXExpire struct {
	Client *redis.Client
	Params Params
}

// Acquire runs SETNX, then EXPIRE.
func (l *SetNXExpire) Acquire(env Env) (*Lease, error) {
	return l.Params.Wait.Retry(env, func() (*Lease, error) {
		ctx := env.Context()
		start := env.Now()
		tok := token(env)
		ok, err := l.Client.Do(ctx, "SETNX", l.Params.Key, tok).Bool()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNotAcquired
		}
		// Between these two commands the key exists without a TTL.
		if err := l.Client.Expire(ctx, l.Params.Key, l.Params.TTL).Err(); err != nil && !errors.Is(err, redis.Nil) {
			// The naive code carries on: it does hold the key.
			_ = err
		}
		return &Lease{Resource: l.Params.Key, LockValue: tok, Start: start, Validity: start.Add(l.Params.TTL)}, nil
	})
}

// Release deletes the key, whoever holds it now.
func (l *SetNXExpire) Release(env Env, lease *Lease) error {
	return l.Client.Del(env.Context(), lease.Resource).Err()
}
