package algorithms

// A reader-writer lock in one Redis hash, as Redisson's RReadWriteLock
// keeps it: the field "mode" is "read" or "write", and one field per
// holder's token counts its holds. Each step is one Lua script:
//
//	read:     if no mode: mode=read, token=1, PEXPIRE ttl       -- first reader
//	          elif mode==read (and no writer waits, prefer: writers):
//	                   HINCRBY token 1, PEXPIRE ttl              -- readers share
//	write:    if no mode: mode=write, token=1, PEXPIRE ttl      -- alone
//	          else (prefer: writers) SET key:writer token PX ttl -- "a writer waits"
//	release:  HINCRBY token -1; at 0 HDEL token; only mode left: DEL key
//
// Weaknesses. Every reader refreshes the whole hash's expiry, so readers
// that keep arriving keep the lock in read mode for ever: with prefer:
// readers (Redisson's behaviour) a writer waits as long as readers
// overlap (writer starvation). With prefer: writers, a waiting writer
// leaves a marker that turns new readers away until it gets in. And, like
// every lease, a reader paused past the TTL still believes it reads while
// the hash has expired and a writer writes (writer overlaps a paused
// reader); only a fencing token checked by the resource closes that.

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// rwRead takes a reader's hold. KEYS: the hash, the waiting-writer marker.
// ARGV: ttl in ms, token, "1" if a waiting writer turns readers away.
const rwRead = `
local mode = redis.call("hget", KEYS[1], "mode")
if ARGV[3] == "1" and redis.call("exists", KEYS[2]) == 1 then return 0 end
if mode == false then
  redis.call("hset", KEYS[1], "mode", "read")
elseif mode ~= "read" then
  return 0
end
redis.call("hincrby", KEYS[1], ARGV[2], 1)
redis.call("pexpire", KEYS[1], ARGV[1])
return 1`

// rwWrite takes a writer's hold. KEYS and ARGV as rwRead; when refused and
// ARGV[3] is "1", it marks a writer as waiting for ttl.
const rwWrite = `
local mode = redis.call("hget", KEYS[1], "mode")
if mode == false then
  redis.call("hset", KEYS[1], "mode", "write", ARGV[2], 1)
  redis.call("pexpire", KEYS[1], ARGV[1])
  if redis.call("get", KEYS[2]) == ARGV[2] then redis.call("del", KEYS[2]) end
  return 1
end
if ARGV[3] == "1" then
  local w = redis.call("get", KEYS[2])
  if w == false or w == ARGV[2] then redis.call("set", KEYS[2], ARGV[2], "px", ARGV[1]) end
end
return 0`

// rwRelease gives one hold of the token back. KEYS: the hash. ARGV: token.
const rwRelease = `
if redis.call("hexists", KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call("hincrby", KEYS[1], ARGV[1], -1) <= 0 then
  redis.call("hdel", KEYS[1], ARGV[1])
  if redis.call("hlen", KEYS[1]) <= 1 then redis.call("del", KEYS[1]) end
end
return 1`

// The reader-writer lock's scripts, exported for the differential tests
// against redis-server (sim/differential).
const (
	ScriptRWRead    = rwRead
	ScriptRWWrite   = rwWrite
	ScriptRWRelease = rwRelease
)

func init() {
	Register(Info{
		Name:      "redis-rwlock",
		Summary:   "reader-writer lock in a Redis hash with mode and per-holder counts (Redisson RReadWriteLock style)",
		Backend:   Backend,
		MinNodes:  1,
		Primitive: PrimitiveReadWrite,
		Params: []Param{
			{Name: "prefer", Expect: "readers or writers", Check: OneOf("readers", "writers")},
		},
		New: func(p Params, c Conns) (Lock, error) {
			if err := needNodes(c, 1, "redis-rwlock"); err != nil {
				return nil, err
			}
			mode := p.Extra[ParamMode]
			if mode == "" {
				mode = "write"
			}
			if mode != "read" && mode != "write" {
				return nil, fmt.Errorf("mode: expected read or write, found %q", mode)
			}
			return &RWLock{Client: c.Redis[0], Key: p.Key, TTL: p.TTL, Read: mode == "read",
				PreferWriters: p.Extra["prefer"] == "writers", Wait: p.Wait}, nil
		},
	})
}

// RWLock is one client's side of the reader-writer lock: a reader's or a
// writer's, as the client declared.
type RWLock struct {
	Client        *redis.Client
	Key           string
	TTL           time.Duration
	Read          bool
	PreferWriters bool
	Wait          WaitPolicy
}

// Acquire takes a reader's or a writer's hold under the wait policy.
func (l *RWLock) Acquire(env Env) (*Lease, error) {
	script := rwWrite
	if l.Read {
		script = rwRead
	}
	prefer := "0"
	if l.PreferWriters {
		prefer = "1"
	}
	// One token for all of a writer's attempts, so that its waiting
	// marker is its own from one retry to the next.
	id := token(env)
	return l.Wait.Retry(env, func() (*Lease, error) {
		start := env.Now()
		ok, err := l.Client.Eval(env.Context(), script, []string{l.Key, l.Key + ":writer"}, l.TTL.Milliseconds(), id, prefer).Int()
		if err != nil {
			return nil, err
		}
		if ok != 1 {
			return nil, ErrNotAcquired
		}
		return &Lease{Resource: l.Key, LockValue: id, Start: start, Validity: start.Add(l.TTL)}, nil
	})
}

// Release gives the hold back, if the hash still counts it.
func (l *RWLock) Release(env Env, lease *Lease) error {
	return l.Client.Eval(env.Context(), rwRelease, []string{l.Key}, lease.LockValue).Err()
}
