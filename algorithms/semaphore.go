package algorithms

// The fair counting semaphore on sorted sets (Carlson, "Redis in Action",
// 6.3.3), which admits at most permits holders:
//
//	acquire:  MULTI
//	            ZREMRANGEBYSCORE sem -inf now-ttl        -- drop timed-out holders
//	            ZINTERSTORE sem:owner 2 sem:owner sem WEIGHTS 1 0
//	            INCR sem:counter                          -- a ticket: fairness
//	          EXEC
//	          MULTI
//	            ZADD sem now id
//	            ZADD sem:owner ticket id
//	            ZRANK sem:owner id                        -- < permits: acquired
//	          EXEC
//	          else ZREM sem id; ZREM sem:owner id
//	release:  ZREM sem id; ZREM sem:owner id
//
// The ticket order (sem:owner) decides who holds, so a client whose clock
// runs behind cannot jump the queue; but expiry is still decided by "now",
// and with clock: client (redis-semaphore) now is each client's own clock.
// A client whose clock runs ahead by more than the remaining lease removes
// the entries of holders that are still working, and so takes a permit
// that is not free: permits+1 holders (the book warns of it: "the clocks
// of the clients must be in agreement"). With clock: server, now is the
// Redis node's TIME, asked first: all clients judge expiry on one clock,
// and the skew no longer matters (a node's own clock jump still does).
//
// The two transactions also race, as the book says (6.3.5, "Preventing
// race conditions"): c1 draws ticket 1, c2 draws ticket 2 and ranks
// first, then c1 adds its lower ticket and ranks first too; both hold one
// permit (locklab explore redis-semaphore --runs 4 --workers 1 --seed 1
// finds it with no fault at all). The book's fix takes a short lock
// around the acquisition; this semaphore is the unguarded one.
//
// Like every lease, a permit expires on the server's judgement while its
// holder may still be working (a pause past the TTL); this semaphore does
// not refresh permits.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The per-client parameters the scenario runner adds to Params.Extra: the
// hold mode a client of a reader-writer lock asks for ("read" or "write")
// and the permits of a semaphore.
const (
	ParamMode    = "mode"
	ParamPermits = "permits"
)

// The primitives other than a mutex (Info.Primitive).
const (
	PrimitiveSemaphore = "semaphore"
	PrimitiveReadWrite = "rwlock"
)

func init() {
	Register(Info{
		Name:      "redis-semaphore",
		Summary:   "fair counting semaphore on sorted sets (Redis in Action 6.3), expiry by client or server time",
		Backend:   Backend,
		MinNodes:  1,
		Primitive: PrimitiveSemaphore,
		Params: []Param{
			{Name: "clock", Expect: "client or server", Check: OneOf("client", "server")},
		},
		New: func(p Params, c Conns) (Lock, error) {
			if err := needNodes(c, 1, "redis-semaphore"); err != nil {
				return nil, err
			}
			permits, err := permitsOf(p)
			if err != nil {
				return nil, err
			}
			return &Semaphore{Client: c.Redis[0], Key: p.Key, TTL: p.TTL, Permits: permits,
				ServerTime: p.Extra["clock"] == "server", Wait: p.Wait}, nil
		},
	})
}

// permitsOf reads the semaphore's permits from Params.Extra (1 when absent:
// a semaphore of one permit is a mutex).
func permitsOf(p Params) (int, error) {
	v, ok := p.Extra[ParamPermits]
	if !ok {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("permits: expected a number >= 1, found %q", v)
	}
	return n, nil
}

// Semaphore is the fair counting semaphore.
type Semaphore struct {
	Client  *redis.Client
	Key     string
	TTL     time.Duration
	Permits int
	// ServerTime judges expiry by the node's TIME instead of the client's
	// clock.
	ServerTime bool
	Wait       WaitPolicy
}

func (s *Semaphore) owners() string  { return s.Key + ":owner" }
func (s *Semaphore) counter() string { return s.Key + ":counter" }

// Acquire takes a permit under the wait policy.
func (s *Semaphore) Acquire(env Env) (*Lease, error) {
	return s.Wait.Retry(env, func() (*Lease, error) { return s.try(env) })
}

// now is the time expiry is judged by, in ms: the client's or the node's.
func (s *Semaphore) now(env Env) (int64, error) {
	if !s.ServerTime {
		return env.Now().UnixMilli(), nil
	}
	t, err := s.Client.Time(env.Context()).Result()
	if err != nil {
		return 0, err
	}
	return t.UnixMilli(), nil
}

func (s *Semaphore) try(env Env) (*Lease, error) {
	start := env.Now()
	id := token(env)
	now, err := s.now(env)
	if err != nil {
		return nil, err
	}
	ctx := env.Context()
	var ticket *redis.IntCmd
	if _, err := s.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, s.Key, "-inf", strconv.FormatInt(now-s.TTL.Milliseconds(), 10))
		p.ZInterStore(ctx, s.owners(), &redis.ZStore{Keys: []string{s.owners(), s.Key}, Weights: []float64{1, 0}})
		ticket = p.Incr(ctx, s.counter())
		return nil
	}); err != nil {
		return nil, err
	}
	var rank *redis.IntCmd
	if _, err := s.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, s.Key, redis.Z{Score: float64(now), Member: id})
		p.ZAdd(ctx, s.owners(), redis.Z{Score: float64(ticket.Val()), Member: id})
		rank = p.ZRank(ctx, s.owners(), id)
		return nil
	}); err != nil {
		return nil, err
	}
	if rank.Val() < int64(s.Permits) {
		return &Lease{Resource: s.Key, LockValue: id, Start: start, Validity: start.Add(s.TTL)}, nil
	}
	if err := s.remove(env, id); err != nil {
		return nil, err
	}
	return nil, ErrNotAcquired
}

func (s *Semaphore) remove(env Env, id string) error {
	ctx := env.Context()
	_, err := s.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, s.Key, id)
		p.ZRem(ctx, s.owners(), id)
		return nil
	})
	return err
}

// Release gives the permit back.
func (s *Semaphore) Release(env Env, l *Lease) error { return s.remove(env, l.LockValue) }
