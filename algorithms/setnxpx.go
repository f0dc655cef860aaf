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
// The lease runs from the moment the request was sent, not from the reply:
// the key may have been set at any instant in between, so a reply that
// arrives late (validity_from: reply shows what goes wrong otherwise) can
// hand out a lock that has already expired. A reply that comes back after
// the lease is over is treated as a failure and the key released.
//
// With a replicated Redis, wait_replicas: N makes Acquire send WAIT N
// wait_timeout after a successful SET: the lock counts as held only if N
// replicas acknowledged it, else it is released and the acquire retried.
// This narrows the failover window but does not close it: WAIT makes no
// replica promotion pick a replica that has the write, and a write WAIT
// timed out on may still be replicated later (Redis docs, WAIT).
//
// Both share a weakness no release can fix: the lock expires on the server's
// clock while the client may still believe it holds it (a GC pause, a slow
// network). Only a fencing token checked by the protected resource closes
// that gap (Kleppmann, "How to do distributed locking").

import (
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// compareAndDelete is the release script (Redis docs, "Correct
// implementation with a single instance").
const compareAndDelete = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// compareAndPExpire extends the lock only if it still holds our token.
const compareAndPExpire = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`

func init() {
	Register(Info{
		Name:     "set-nx-px-del",
		Summary:  "SET NX PX, plain DEL release",
		Backend:  Backend,
		MinNodes: 1,
		Params:   setNXPXParams,
		New: func(p Params, c Conns) (Lock, error) {
			return newSetNXPX(p, c, "set-nx-px-del", false)
		},
	})
	Register(Info{
		Name:     "set-nx-px-lua",
		Summary:  "SET NX PX, Lua compare-and-delete release",
		Backend:  Backend,
		MinNodes: 1,
		Params:   setNXPXParams,
		New: func(p Params, c Conns) (Lock, error) {
			return newSetNXPX(p, c, "set-nx-px-lua", true)
		},
	})
}

// setNXPXParams: where the lease's validity is counted from, and whether a
// "busy" answer is followed by a check that the key holds our own token.
var setNXPXParams = []Param{
	{Name: "validity_from", Expect: "start or reply", Check: OneOf("start", "reply")},
	{Name: "verify_ownership", Expect: "true or false", Check: BoolParam},
	{Name: "wait_replicas", Expect: "a number of replicas >= 1", Check: func(v string) error {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			return errors.New("expected a number of replicas >= 1")
		}
		return nil
	}},
	{Name: "wait_timeout", Expect: "a duration between 1ms and 1h such as 200ms", Check: func(v string) error {
		_, err := parseWaitTimeout(v)
		return err
	}},
}

// parseWaitTimeout reads wait_timeout: WAIT's timeout, at least 1 ms (WAIT
// counts milliseconds) and at most an hour: a lock that waits longer for its
// replicas than any lease lives waits for nothing, and 2562047h was accepted
// (issue 25).
func parseWaitTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Millisecond || d > time.Hour {
		return 0, errors.New("expected a duration between 1ms and 1h such as 200ms")
	}
	return d, nil
}

func newSetNXPX(p Params, c Conns, name string, cad bool) (Lock, error) {
	if err := needNodes(c, 1, name); err != nil {
		return nil, err
	}
	l := &SetNXPX{Client: c.Redis[0], Params: p, CompareAndDelete: cad}
	switch p.Extra["validity_from"] {
	case "", "start":
	case "reply":
		l.ValidityFromReply = true
	default:
		return nil, errors.New(name + `: validity_from: expected "start" or "reply"`)
	}
	l.VerifyOwnership = p.Extra["verify_ownership"] == "true"
	if v, ok := p.Extra["wait_replicas"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, errors.New(name + ": wait_replicas: expected a number of replicas >= 1, got " + strconv.Quote(v))
		}
		l.WaitReplicas = n
		l.WaitTimeout = 100 * time.Millisecond
		if t, ok := p.Extra["wait_timeout"]; ok {
			d, err := parseWaitTimeout(t)
			if err != nil {
				return nil, errors.New(name + ": wait_timeout: " + err.Error() + ", got " + strconv.Quote(t))
			}
			l.WaitTimeout = d
		}
	}
	return l, nil
}

// SetNXPX is the atomic single-instance lock.
type SetNXPX struct {
	Client *redis.Client
	Params Params
	// CompareAndDelete releases with the Lua script instead of a plain DEL.
	CompareAndDelete bool
	// ValidityFromReply is the naive variant that counts the lease from the
	// reply instead of from the request.
	ValidityFromReply bool
	// VerifyOwnership, when SET NX finds the key taken, reads it back: if it
	// holds our own token, an earlier copy of this very request (re-sent by
	// the client library after a lost reply) set it, and we do hold the lock.
	VerifyOwnership bool
	// WaitReplicas, when > 0, sends WAIT WaitReplicas WaitTimeout after the
	// SET and keeps the lock only if that many replicas acknowledged it.
	WaitReplicas int
	WaitTimeout  time.Duration
}

// Acquire runs SET key token NX PX ttl.
func (l *SetNXPX) Acquire(env Env) (*Lease, error) {
	return l.Params.Wait.Retry(env, func() (*Lease, error) {
		ctx := env.Context()
		start := env.Now()
		tok := token(env)
		err := l.Client.SetArgs(ctx, l.Params.Key, tok, redis.SetArgs{Mode: "NX", TTL: l.Params.TTL}).Err()
		if errors.Is(err, redis.Nil) && l.VerifyOwnership {
			if v, gerr := l.Client.Get(ctx, l.Params.Key).Result(); gerr == nil && v == tok {
				err = nil
			}
		}
		if errors.Is(err, redis.Nil) {
			return nil, ErrNotAcquired
		}
		if err != nil {
			return nil, err
		}
		lease := &Lease{Resource: l.Params.Key, LockValue: tok, Start: start, Validity: start.Add(l.Params.TTL)}
		if l.WaitReplicas > 0 {
			acked, err := l.Client.Wait(ctx, l.WaitReplicas, l.WaitTimeout).Result()
			if err != nil || acked < int64(l.WaitReplicas) {
				// Too few copies to survive a failover: give it back.
				l.Release(env, lease)
				if err != nil {
					return nil, err
				}
				return nil, ErrNotAcquired
			}
		}
		if l.ValidityFromReply {
			lease.Validity = env.Now().Add(l.Params.TTL)
		} else if !lease.Valid(env.Now()) {
			// Granted, but by now already expired: give it back.
			l.Release(env, lease)
			return nil, ErrNotAcquired
		}
		return lease, nil
	})
}

// Release deletes the key: blindly, or only if it still holds our token.
func (l *SetNXPX) Release(env Env, lease *Lease) error {
	if l.CompareAndDelete {
		return l.Client.Eval(env.Context(), compareAndDelete, []string{lease.Resource}, lease.LockValue).Err()
	}
	return l.Client.Del(env.Context(), lease.Resource).Err()
}

// Extend resets the key's TTL if it still holds our token (the watchdog).
func (l *SetNXPX) Extend(env Env, lease *Lease) error {
	n, err := l.Client.Eval(env.Context(), compareAndPExpire, []string{lease.Resource}, lease.LockValue, strconv.FormatInt(l.Params.TTL.Milliseconds(), 10)).Int()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrNotAcquired
	}
	return nil
}
