package algorithms

// The reentrant lock of Redisson (RLock): a hash from owner id to a hold
// count, so the same owner may lock again while it holds the lock.
//
//	acquire:  if not EXISTS key or HEXISTS key owner:
//	              HINCRBY key owner 1; PEXPIRE key ttl; return nil
//	          return PTTL key                     -- busy
//	release:  if not HEXISTS key owner: return nil
//	          n = HINCRBY key owner -1
//	          if n > 0: PEXPIRE key ttl; return 0  -- still held
//	          DEL key; return 1
//
// Weakness: acquiring is not idempotent. If the reply to the acquire script
// is lost and the client library sends the script again, it runs twice: the
// count is 2 after one acquire, the one release brings it to 1, and the lock
// stays taken by an owner that believes it let go — until the TTL (30 s, the
// watchdog timeout, in Redisson) runs out.

import (
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

const (
	reentrantAcquire = `if (redis.call("exists", KEYS[1]) == 0) or (redis.call("hexists", KEYS[1], ARGV[2]) == 1) then redis.call("hincrby", KEYS[1], ARGV[2], 1); redis.call("pexpire", KEYS[1], ARGV[1]); return nil; end; return redis.call("pttl", KEYS[1]);`
	reentrantRelease = `if (redis.call("hexists", KEYS[1], ARGV[2]) == 0) then return nil; end; local counter = redis.call("hincrby", KEYS[1], ARGV[2], -1); if (counter > 0) then redis.call("pexpire", KEYS[1], ARGV[1]); return 0; else redis.call("del", KEYS[1]); return 1; end;`
	reentrantRenew   = `if (redis.call("hexists", KEYS[1], ARGV[2]) == 1) then redis.call("pexpire", KEYS[1], ARGV[1]); return 1; end; return 0;`
)

func init() {
	Register(Info{
		Name:      "reentrant",
		Summary:   "Redisson-style reentrant hash lock (HINCRBY count, PEXPIRE)",
		Backend:   Backend,
		MinNodes:  1,
		Reentrant: true,
		New: func(p Params, c Conns) (Lock, error) {
			if err := needNodes(c, 1, "reentrant"); err != nil {
				return nil, err
			}
			return &Reentrant{Client: c.Redis[0], Params: p}, nil
		},
	})
}

// Reentrant is the Redisson-style hash lock. Its owner id (Redisson's
// UUID:threadId) is drawn once per client and travels as the lease token.
type Reentrant struct {
	Client *redis.Client
	Params Params
	owner  string
}

func (l *Reentrant) ttl() string { return strconv.FormatInt(l.Params.TTL.Milliseconds(), 10) }

// Acquire runs the acquire script until it replies nil.
func (l *Reentrant) Acquire(env Env) (*Lease, error) {
	if l.owner == "" {
		l.owner = token(env)
	}
	return l.Params.Wait.Retry(env, func() (*Lease, error) {
		start := env.Now()
		err := l.Client.Eval(env.Context(), reentrantAcquire, []string{l.Params.Key}, l.ttl(), l.owner).Err()
		switch {
		case errors.Is(err, redis.Nil):
			return &Lease{Resource: l.Params.Key, LockValue: l.owner, Start: start, Validity: start.Add(l.Params.TTL)}, nil
		case err != nil:
			return nil, err
		default:
			return nil, ErrNotAcquired // the reply was the holder's PTTL
		}
	})
}

// Release undoes one acquire.
func (l *Reentrant) Release(env Env, lease *Lease) error {
	err := l.Client.Eval(env.Context(), reentrantRelease, []string{lease.Resource}, l.ttl(), lease.LockValue).Err()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// Extend is the watchdog's renewal.
func (l *Reentrant) Extend(env Env, lease *Lease) error {
	n, err := l.Client.Eval(env.Context(), reentrantRenew, []string{lease.Resource}, l.ttl(), lease.LockValue).Int()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrNotAcquired
	}
	return nil
}
