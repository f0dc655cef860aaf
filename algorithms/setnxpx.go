package algorithms

// The single-instance lock from the Redis documentation:
//
//	acquire:  SET key token NX PX ttl    -- value and expiry in one step
//	release:  DEL key                    (set-nx-px-del)
//	      or  if GET key == token then DEL key   -- atomically, in Lua
//	                                     (set-nx-px-lua)
//
// The plain DEL release is wrong: a holder that pauses past its TTL wakes up
// and deletes the key of the client that took the lock after it, so two later
// clients hold at once. The compare-and-delete script only deletes the key if
// it still holds our token.
//
// Both share a weakness no release can fix: the lock expires on the server's
// clock while the client may still believe it holds it (a GC pause, a slow
// network). Only a fencing token checked by the protected resource closes
// that gap (Kleppmann, "How to do distributed locking").

import (
	"errors"

	"github.com/locklab/locklab/sim"
	"github.com/redis/go-redis/v9"
)

func init() {
	Register(Info{
		Name:     "set-nx-px-del",
		Summary:  "SET NX PX, plain DEL release",
		Backend:  "redis",
		MinNodes: 1,
		New: func(p Params, c Conns) (Lock, error) {
			if err := needNodes(c, 1, "set-nx-px-del"); err != nil {
				return nil, err
			}
			return &SetNXPX{Client: c.Redis[0], Params: p}, nil
		},
	})
	Register(Info{
		Name:     "set-nx-px-lua",
		Summary:  "SET NX PX, Lua compare-and-delete release",
		Backend:  "redis",
		MinNodes: 1,
		New: func(p Params, c Conns) (Lock, error) {
			if err := needNodes(c, 1, "set-nx-px-lua"); err != nil {
				return nil, err
			}
			return &SetNXPX{Client: c.Redis[0], Params: p, CompareAndDelete: true}, nil
		},
	})
}

// SetNXPX is the atomic single-instance lock.
type SetNXPX struct {
	Client *redis.Client
	Params Params
	// CompareAndDelete releases with the Lua script instead of a plain DEL.
	CompareAndDelete bool
}

// Acquire runs SET key token NX PX ttl. The validity the client believes is
// counted from before the request was sent: the key may have been set at
// any moment after that.
func (l *SetNXPX) Acquire(env Env) (*Lease, error) {
	return l.Params.Wait.retry(env, func() (*Lease, error) {
		start := env.Now()
		tok := token(env)
		err := l.Client.SetArgs(env.Context(), l.Params.Key, tok, redis.SetArgs{Mode: "NX", TTL: l.Params.TTL}).Err()
		if errors.Is(err, redis.Nil) {
			return nil, ErrNotAcquired
		}
		if err != nil {
			return nil, err
		}
		return &Lease{Resource: l.Params.Key, Token: tok, Start: start, Validity: start.Add(l.Params.TTL)}, nil
	})
}

// Release deletes the key: blindly, or only if it still holds our token.
func (l *SetNXPX) Release(env Env, lease *Lease) error {
	if l.CompareAndDelete {
		return l.Client.Eval(env.Context(), sim.ScriptCompareAndDelete, []string{lease.Resource}, lease.Token).Err()
	}
	return l.Client.Del(env.Context(), lease.Resource).Err()
}
