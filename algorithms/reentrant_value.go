package algorithms

// A reentrant lock by value equality, as many Redis lock write-ups build
// one: the client's value (one per client, like Redisson's UUID:threadId)
// is the key's value, and "the key holds my value" is taken to mean "I
// already hold the lock".
//
//	acquire:  SET key value NX PX ttl             -- OK: a first hold
//	          otherwise GET key; if it == value:
//	              PEXPIRE key ttl                 -- re-entered
//	          otherwise busy
//	release:  compare-and-delete (if GET key == value then DEL key)
//
// Weakness: there is no hold count. A nested acquire (a method that locks,
// calling another that locks the same resource) re-enters, and the nested
// release deletes the key while the outer critical section still runs:
// another client acquires with no fault at all
// (reentrant-value-inner-release). Redisson's hash lock (reentrant.go)
// counts holds, so the inner release only decrements.

import (
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:      "reentrant-by-value",
		Summary:   "reentrant by value equality (GET == my value, then PEXPIRE), no hold count, compare-and-delete release",
		Backend:   Backend,
		MinNodes:  1,
		Reentrant: true,
		New: func(p Params, c Conns) (Lock, error) {
			if err := needNodes(c, 1, "reentrant-by-value"); err != nil {
				return nil, err
			}
			return &ReentrantByValue{Client: c.Redis[0], Params: p}, nil
		},
	})
}

// ReentrantByValue is the value-equality reentrant lock. Its value is drawn
// once per client and travels as the lease token.
type ReentrantByValue struct {
	Client *redis.Client
	Params Params
	value  string
}

// Acquire sets the key, or re-enters when the key already holds the
// client's value.
func (l *ReentrantByValue) Acquire(env Env) (*Lease, error) {
	if l.value == "" {
		l.value = token(env)
	}
	return l.Params.Wait.Retry(env, func() (*Lease, error) {
		start := env.Now()
		lease := &Lease{Resource: l.Params.Key, LockValue: l.value, Start: start, Validity: start.Add(l.Params.TTL)}
		ok, err := l.Client.SetArgs(env.Context(), l.Params.Key, l.value, redis.SetArgs{Mode: "NX", TTL: l.Params.TTL}).Result()
		switch {
		case err == nil && ok == "OK":
			return lease, nil
		case err != nil && !errors.Is(err, redis.Nil):
			return nil, err
		}
		v, err := l.Client.Get(env.Context(), l.Params.Key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			return nil, ErrNotAcquired // expired between the SET and the GET
		case err != nil:
			return nil, err
		case v != l.value:
			return nil, ErrNotAcquired
		}
		if err := l.Client.PExpire(env.Context(), l.Params.Key, l.Params.TTL).Err(); err != nil {
			return nil, err
		}
		return lease, nil
	})
}

// Release deletes the key if it still holds the client's value: the first
// release, inner or outer, frees the lock.
func (l *ReentrantByValue) Release(env Env, lease *Lease) error {
	err := l.Client.Eval(env.Context(), compareAndDelete, []string{lease.Resource}, lease.LockValue).Err()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// Extend pushes the expiry if the key still holds the client's value.
func (l *ReentrantByValue) Extend(env Env, lease *Lease) error {
	ms := strconv.FormatInt(l.Params.TTL.Milliseconds(), 10)
	n, err := l.Client.Eval(env.Context(), compareAndPExpire, []string{lease.Resource}, lease.LockValue, ms).Int()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrNotAcquired
	}
	return nil
}
