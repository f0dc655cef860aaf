package algorithms

// A permit-expiring semaphore in Lua, as Redisson's
// RPermitExpirableSemaphore keeps it: a counter of free permits and a
// sorted set of the permits handed out, each scored by the instant its
// lease ends. Every script first takes back the permits whose lease has
// ended (reclaim), then does its step; time is the client's clock, sent
// as an argument, as Redisson sends System.currentTimeMillis().
//
//	reclaim:  ids = ZRANGEBYSCORE timeout -inf now
//	          ZREM timeout ids...; INCRBY free #ids      -- expired permits come back
//	acquire:  (first use: SET free permits)
//	          reclaim; free < 1 → refused
//	          DECR free; ZADD timeout now+lease id         -- a permit, with its lease
//	refresh:  reclaim; ZSCORE timeout id missing → refused (the lease is lost)
//	          ZADD timeout now+lease id
//	release:  reclaim; ZREM timeout id == 1 → INCR free
//
// The counter and the set must agree: a permit is either counted free or
// listed in the set, never both. A refresh that does not look first (a
// blind ZADD, refresh: blind) breaks that. Once a holder's lease has ended
// and another acquirer has reclaimed it, the blind refresh lists the
// permit again without taking it from the counter: from then on the
// semaphore hands out one permit more than it has (permits+1 holders),
// and the holder is never told its lease ended (swarthy/redis-semaphore
// #175, fixed by refusing the refresh of a lease that is gone and telling
// the holder: refresh: checked).
//
// Like every lease, a permit still expires on the server while its holder
// works on (a pause past the lease): refreshing shrinks that window, only
// a fencing token closes it.

import (
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// reclaimLua is the prologue of every script: permits whose lease ended at
// or before ARGV now come back to the free counter. KEYS: free counter,
// timeout set; now is the script's local "now".
const reclaimLua = `
local gone = redis.call("zrangebyscore", KEYS[2], "-inf", now)
if #gone > 0 then
  redis.call("zremrangebyscore", KEYS[2], "-inf", now)
  redis.call("incrby", KEYS[1], #gone)
end
`

// permitAcquire takes a permit. KEYS: free counter, timeout set. ARGV:
// permits, permit id, now (ms), lease end (ms).
const permitAcquire = `
local now = ARGV[3]
if redis.call("exists", KEYS[1]) == 0 then redis.call("set", KEYS[1], ARGV[1]) end` + reclaimLua + `
if (tonumber(redis.call("get", KEYS[1])) or 0) < 1 then return 0 end
redis.call("decr", KEYS[1])
redis.call("zadd", KEYS[2], ARGV[4], ARGV[2])
return 1`

// permitRefresh pushes a permit's lease end, only if the permit is still
// listed. KEYS as permitAcquire. ARGV: permit id, now (ms), lease end (ms).
const permitRefresh = `
local now = ARGV[2]` + reclaimLua + `
if redis.call("zscore", KEYS[2], ARGV[1]) == false then return 0 end
redis.call("zadd", KEYS[2], ARGV[3], ARGV[1])
return 1`

// permitRefreshBlind is the refresh that does not look: it lists the
// permit with its new lease end whether or not it was still listed.
// KEYS and ARGV as permitRefresh.
const permitRefreshBlind = `
redis.call("zadd", KEYS[2], ARGV[3], ARGV[1])
return 1`

// permitRelease gives a permit back, if it is still listed. KEYS as
// permitAcquire. ARGV: permit id, now (ms).
const permitRelease = `
local now = ARGV[2]` + reclaimLua + `
if redis.call("zrem", KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call("incr", KEYS[1])
return 1`

// The permit-expiring semaphore's scripts, exported for the differential
// tests against redis-server (sim/differential).
const (
	ScriptPermitAcquire      = permitAcquire
	ScriptPermitRefresh      = permitRefresh
	ScriptPermitRefreshBlind = permitRefreshBlind
	ScriptPermitRelease      = permitRelease
)

func init() {
	Register(Info{
		Name:      "redis-permit-semaphore",
		Summary:   "permit-expiring semaphore in Lua: a free counter and a sorted set of leases (Redisson RPermitExpirableSemaphore style)",
		Backend:   Backend,
		MinNodes:  1,
		Primitive: PrimitiveSemaphore,
		Params: []Param{
			{Name: "refresh", Expect: "none, blind or checked", Check: OneOf("none", "blind", "checked")},
		},
		New: func(p Params, c Conns) (Lock, error) {
			if err := needNodes(c, 1, "redis-permit-semaphore"); err != nil {
				return nil, err
			}
			permits, err := permitsOf(p)
			if err != nil {
				return nil, err
			}
			s := &PermitSemaphore{Client: c.Redis[0], Key: p.Key, TTL: p.TTL, Permits: permits, Wait: p.Wait}
			switch p.Extra["refresh"] {
			case "blind":
				s.Refresh = RefreshBlind
			case "checked":
				s.Refresh = RefreshChecked
			}
			if s.Refresh != RefreshNone {
				if c.Fresh == nil {
					return nil, errors.New("redis-permit-semaphore: a refresh needs a second set of connections")
				}
				// The refresher talks over connections of its own, as
				// Redisson's renewal timer does.
				s.Refresher = c.Fresh().Redis[0]
			}
			return s, nil
		},
	})
}

// PermitRefresh says whether, and how, a holder refreshes its permit's
// lease in the background.
type PermitRefresh int

const (
	// RefreshNone: the lease ends TTL after the acquire; the holder must
	// finish by then.
	RefreshNone PermitRefresh = iota
	// RefreshBlind: every TTL/3 the lease is pushed with a blind ZADD.
	RefreshBlind
	// RefreshChecked: every TTL/3 the lease is pushed only if the permit is
	// still listed; when it is not, the holder is told it lost the permit.
	RefreshChecked
)

// PermitSemaphore is the permit-expiring semaphore.
type PermitSemaphore struct {
	Client *redis.Client
	// Refresher is the background refresh's own connection.
	Refresher *redis.Client
	Key       string
	TTL       time.Duration
	Permits   int
	Refresh   PermitRefresh
	Wait      WaitPolicy
}

func (s *PermitSemaphore) keys() []string { return []string{s.Key, s.Key + ":timeout"} }

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// Acquire takes a permit under the wait policy and, with a refresh, starts
// refreshing its lease.
func (s *PermitSemaphore) Acquire(env Env) (*Lease, error) {
	l, err := s.Wait.Retry(env, func() (*Lease, error) {
		start := env.Now()
		id := token(env)
		ok, err := s.Client.Eval(env.Context(), permitAcquire, s.keys(), s.Permits, id, ms(start), ms(start.Add(s.TTL))).Int()
		if err != nil {
			return nil, err
		}
		if ok != 1 {
			return nil, ErrNotAcquired
		}
		return &Lease{Resource: s.Key, LockValue: id, Start: start, Validity: start.Add(s.TTL)}, nil
	})
	if err != nil || s.Refresh == RefreshNone {
		return l, err
	}
	// A refreshed permit is held until it is released (or its refresh is
	// refused): the holder has no deadline of its own.
	r := &renewal{}
	l.Validity = farFuture
	l.renewal = r
	script := permitRefreshBlind
	if s.Refresh == RefreshChecked {
		script = permitRefresh
	}
	env.Go(func(bg Env) {
		for {
			bg.Sleep(s.TTL / 3)
			if r.stopped {
				return
			}
			now := bg.Now()
			ok, err := s.Refresher.Eval(bg.Context(), script, s.keys(), l.LockValue, ms(now), ms(now.Add(s.TTL))).Int()
			if err != nil {
				return // as a watchdog does: the holder is not told
			}
			if ok != 1 {
				// The lease ended before this refresh and the permit went
				// back to the pool: the holder must stop.
				l.MarkLost()
				return
			}
		}
	})
	return l, nil
}

// Release stops the refresh and gives the permit back.
func (s *PermitSemaphore) Release(env Env, l *Lease) error {
	if l.renewal != nil {
		l.renewal.stopped = true
	}
	return s.Client.Eval(env.Context(), permitRelease, s.keys(), l.LockValue, ms(env.Now())).Err()
}
