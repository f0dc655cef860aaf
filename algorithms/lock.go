// Package algorithms holds the lock algorithms locklab puts under test. Each
// file opens with the protocol and its known weakness, and reads like the
// protocol on a whiteboard. Lock code is ordinary sequential Go: it talks to
// Redis through unmodified go-redis clients and asks Env, never the time
// package, for the time, for sleeps and for randomness, so the same code runs
// inside the simulation and against real servers (see RealEnv).
package algorithms

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Env is everything a lock algorithm may ask of the world around it.
type Env interface {
	// Now is the client's own wall clock, which may jump and drift.
	Now() time.Time
	// Sleep waits d as measured by the client's own oscillator.
	Sleep(d time.Duration)
	// Rand is the only source of randomness (tokens, retry jitter).
	Rand() *rand.Rand
	// Context is passed to go-redis calls; it carries no deadline.
	Context() context.Context
	// Parallel runs fns concurrently (Redlock asks its N nodes at once) and
	// returns when all have returned.
	Parallel(fns ...func(Env))
	// Go starts fn in the background (a watchdog) and returns at once. The
	// background activity ends when fn returns or the client dies.
	Go(fn func(Env))
}

// Lease is what a client believes after a successful acquire: that it holds
// Resource, proven by LockValue, until Validity on its own clock. The words
// are the course's glossary (reports/course/course.yaml): a token is always
// a fencing token, and the owner's random value is the lock value.
type Lease struct {
	Resource string
	// LockValue is the value the client wrote into the lock (a random
	// string, a znode's name, a session's id): it names the owner, so
	// that only the owner's release or renewal acts on the lock.
	LockValue string
	// FencingToken, when not zero, is a number that grows with every
	// grant, which the protected resource can check (Kleppmann; its
	// source is params.token_source, its check resource.token_check).
	FencingToken int64
	Start        time.Time // client clock when the acquire began
	Validity     time.Time // client clock after which it must stop acting as holder
	Nodes        []string  // the nodes that granted the lock (Redlock)

	lost      bool
	lostHooks []func()
	renewal   *renewal
	failHooks []func(error)
}

// NoDeadline is the Validity, past Start, of a lease that no clock ends: a
// ZooKeeper lock is held until its session is lost (the ephemeral node goes
// with the session), not until a time the client could compute.
const NoDeadline = 100 * 365 * 24 * time.Hour

// HasDeadline says whether the lease ends at a time on the client's clock
// (Validity), rather than only when the client learns it lost the lock.
func (l *Lease) HasDeadline() bool { return l.Validity.Sub(l.Start) < NoDeadline }

// Valid reports whether, by the client's own clock and by what the client
// has learned, the lease still holds.
func (l *Lease) Valid(now time.Time) bool { return !l.lost && now.Before(l.Validity) }

// MarkLost records that the client learned it no longer holds the lock (a
// ZooKeeper session went SUSPENDED or LOST, a renewal failed). From this
// instant the client stops acting as holder; hooks run once.
func (l *Lease) MarkLost() {
	if l.lost {
		return
	}
	l.lost = true
	hooks := l.lostHooks
	l.lostHooks = nil
	for _, h := range hooks {
		h()
	}
}

// Lost reports whether MarkLost was called.
func (l *Lease) Lost() bool { return l.lost }

// WhenLost registers fn to run when the lease is marked lost (at once if it
// already is). The workload uses it to end the client's holding interval.
func (l *Lease) WhenLost(fn func()) {
	if l.lost {
		fn()
		return
	}
	l.lostHooks = append(l.lostHooks, fn)
}

// RenewalFailed records that a background renewal of the lease failed
// with err (whether the holder is told is the algorithm's business: it
// calls MarkLost if so). The workload records it as an event.
func (l *Lease) RenewalFailed(err error) {
	for _, h := range l.failHooks {
		h(err)
	}
}

// WhenRenewalFails registers fn to run on each failed renewal.
func (l *Lease) WhenRenewalFails(fn func(error)) { l.failHooks = append(l.failHooks, fn) }

// ErrNotAcquired means the wait policy ran out without getting the lock.
var ErrNotAcquired = errors.New("lock not acquired")

// Extender is a lock whose lease can be extended (watchdog renewal).
type Extender interface {
	// Extend pushes the lock's expiry to TTL from now, if the lease still
	// owns it.
	Extend(env Env, l *Lease) error
}

// Lock is one lock algorithm bound to one client's connections.
type Lock interface {
	// Acquire tries to take the lock, retrying under the lock's wait policy.
	Acquire(env Env) (*Lease, error)
	// Release gives the lock up. Releasing a lease that has expired is not
	// an error for the caller to handle: the algorithm does what it does.
	Release(env Env, l *Lease) error
}

// WaitPolicy says how Acquire waits for a busy lock: it retries every Delay
// plus a random part of up to Jitter, for at most Attempts tries (0 means
// until it succeeds). With Backoff set to BackoffExponential the delay
// doubles after every failed try, from Delay up to Max, as go-redis's
// redislock (ExponentialBackoff) and the AWS "exponential backoff and
// jitter" advice do: a waiter that keeps finding the lock held asks less
// and less often, instead of polling a held key at a fixed rate.
type WaitPolicy struct {
	Attempts int
	Delay    time.Duration
	Jitter   time.Duration
	// Backoff is BackoffFixed ("", the default) or BackoffExponential.
	Backoff string
	// Max caps the exponential delay (the Jitter draw comes on top).
	Max time.Duration
}

// Wait policies' backoff kinds.
const (
	// BackoffFixed retries every Delay (plus jitter).
	BackoffFixed = "fixed"
	// BackoffExponential retries after Delay, 2×Delay, 4×Delay, … up to
	// Max (plus jitter each time).
	BackoffExponential = "exponential"
)

// Backoffs are the backoff kinds a wait policy accepts.
var Backoffs = []string{BackoffFixed, BackoffExponential}

// pause is how long the policy waits before try number i (i >= 1), before
// the jitter: Delay, or under exponential backoff Delay×2^(i-1) up to Max.
func (p WaitPolicy) pause(i int) time.Duration {
	if p.Backoff != BackoffExponential || p.Delay <= 0 {
		return p.Delay
	}
	d := p.Delay
	for k := 1; k < i && d < p.Max; k++ {
		d *= 2
	}
	return min(d, max(p.Max, p.Delay))
}

// Retry runs try under the policy until it returns a lease or an error
// other than ErrNotAcquired: the first attempt at once, each later one
// after the policy's pause plus a draw of Jitter from the client's seeded
// source (one draw per try, whatever the backoff).
func (p WaitPolicy) Retry(env Env, try func() (*Lease, error)) (*Lease, error) {
	for i := 0; p.Attempts == 0 || i < p.Attempts; i++ {
		if i > 0 {
			d := p.pause(i)
			if p.Jitter > 0 {
				d += time.Duration(env.Rand().Int64N(int64(p.Jitter)))
			}
			env.Sleep(d)
		}
		l, err := try()
		if !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
	}
	return nil, ErrNotAcquired
}

// Params configures an algorithm; Factory builds one client's Lock.
type Params struct {
	Key  string
	TTL  time.Duration
	Wait WaitPolicy
	// Extra holds algorithm-specific settings (for example "drift_factor").
	Extra map[string]string
}

// Conns are the connections one client has: one go-redis client per Redis
// node, in node order. Other backends add their own fields.
type Conns struct {
	Redis []*redis.Client
	// Tokens is the node that hands out fencing tokens, if the scenario has
	// one apart from the lock nodes.
	Tokens *redis.Client
	// Backend carries a non-Redis client (the ZooKeeper session), if any.
	Backend any
	// Fresh returns a second, independent set of connections for the same
	// client, for a background activity (a watchdog) that must not share
	// the worker's connections.
	Fresh func() Conns
}

// Factory builds a client's lock from its connections.
type Factory func(p Params, c Conns) (Lock, error)

// Info describes a registered algorithm.
type Info struct {
	Name    string
	Summary string
	// Backend names the backend the algorithm runs on: Backend (Redis,
	// this package) or the Backend constant of its sub-package (gozk's
	// "zookeeper-ensemble", pglock's "postgres", …). What a backend means
	// to a run is its descriptor (scenarios/backend.go).
	Backend string
	// MinNodes is the number of Redis nodes the algorithm needs (1, or N for Redlock).
	MinNodes int
	New      Factory
	// Hidden algorithms resolve by name but are not listed (Custom).
	Hidden bool
	// Primitive is what the algorithm provides: a mutex (""), a counting
	// semaphore (PrimitiveSemaphore: it reads ParamPermits) or a
	// reader-writer lock (PrimitiveReadWrite: it reads ParamMode). The
	// matrix and explore give its clients permits or modes accordingly.
	Primitive string
	// Bubble says the algorithm runs real client code with goroutines and
	// timers of its own (go-zookeeper's client), which only the bubble
	// runtime can host deterministically (sim/bubble.go): a run of it
	// happens inside a testing/synctest bubble, and its Acquire and Release
	// call the library through the Env's Outside door.
	Bubble bool
	// Reentrant says the same client may acquire again while it holds
	// the lock (a nested call), getting a second lease it releases on
	// its own: scenarios may then give clients a nested section
	// (clients.reenter).
	Reentrant bool
	// Params declares the keys of Params.Extra the algorithm reads, so a
	// scenario file's params are checked (with file and line) before
	// anything runs. Build's cross-cutting options (RedisParams) are
	// accepted by every Redis algorithm on top of these.
	Params []Param
	// Fencing is how its leases get fencing tokens: FencingDecorator
	// (the default: Build's token_source: incr), FencingBuiltIn (its own, and
	// Build never adds an INCR) or FencingNone (fencing.go).
	Fencing string
	// Fields are the per-client settings beyond a mutex's that the
	// algorithm reads (ParamPermits, ParamMode): a scenario that sets one
	// for an algorithm that does not read it would be judged as another
	// primitive than the one that ran, so it is refused (issue 31).
	// Register fills it from Primitive when left empty.
	Fields []string
}

// PrimitiveFields are the per-client settings each primitive reads.
var PrimitiveFields = map[string][]string{
	PrimitiveSemaphore: {ParamPermits},
	PrimitiveReadWrite: {ParamMode},
}

// Reads reports whether the algorithm reads the per-client setting field
// (ParamPermits, ParamMode).
func (i Info) Reads(field string) bool {
	return slices.Contains(i.Fields, field)
}

// Readers lists the registered, listed algorithms that read the per-client
// setting field, in sorted order.
func Readers(field string) []string {
	var out []string
	for _, n := range Names() {
		if registry[n].Reads(field) {
			out = append(out, n)
		}
	}
	return out
}

// Param is one algorithm-specific setting a scenario may give in params.
type Param struct {
	Name string
	// Expect says what a value looks like, for error messages ("true or
	// false", "a number in [0, 1)").
	Expect string
	// Check validates a value; nil accepts any text.
	Check func(v string) error
}

// RedisParams are the options Build applies to any Redis algorithm.
var RedisParams = []Param{
	{Name: "watchdog", Expect: "true or false", Check: BoolParam},
	{Name: ParamTokenSource, Expect: "incr or none", Check: OneOf("incr", "none")},
}

// BoolParam accepts the texts strconv.ParseBool does.
func BoolParam(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return errors.New("expected true or false")
	}
	return nil
}

// OneOf accepts exactly the given words.
func OneOf(words ...string) func(string) error {
	return func(v string) error {
		for _, w := range words {
			if v == w {
				return nil
			}
		}
		return &ChoiceError{Words: words}
	}
}

// ChoiceError is OneOf's refusal: it carries the words accepted, so that
// a caller can suggest the one a typo meant (scenarios' did-you-mean).
type ChoiceError struct{ Words []string }

func (e *ChoiceError) Error() string { return "expected one of " + strings.Join(e.Words, ", ") }

var registry = map[string]Info{}

// Register adds an algorithm; call it from an init function.
func Register(i Info) {
	if _, dup := registry[i.Name]; dup {
		panic("algorithms: duplicate " + i.Name)
	}
	if i.Fields == nil {
		i.Fields = PrimitiveFields[i.Primitive]
	}
	registry[i.Name] = i
}

// Build constructs a client's lock and applies the cross-cutting options of
// Params.Extra that work with any Redis algorithm:
//
//	watchdog:     "true"   renew the lease every TTL/3 while held (watchdog.go)
//	token_source: "incr"   attach a fencing token from INCR (fencing.go)
func Build(name string, p Params, c Conns) (Lock, error) {
	info, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := refuseIncr(name, info, p); err != nil {
		return nil, err
	}
	lock, err := info.New(p, c)
	if err != nil {
		return nil, err
	}
	if p.Extra["watchdog"] == "true" {
		if c.Fresh == nil {
			return nil, fmt.Errorf("%s: watchdog needs a second set of connections", name)
		}
		renewer, err := info.New(p, c.Fresh())
		if err != nil {
			return nil, err
		}
		ext, ok := renewer.(Extender)
		if !ok {
			return nil, fmt.Errorf("%s cannot be extended, so it cannot have a watchdog", name)
		}
		lock = &Watchdog{Lock: lock, Renewer: ext, TTL: p.TTL}
	}
	switch f := p.Extra[ParamTokenSource]; f {
	case "", "none":
	case "incr":
		tokens, ok := FenceCounter(c.Tokens, c.Redis)
		if !ok {
			return nil, fmt.Errorf("%s: fencing by INCR needs a Redis node", name)
		}
		lock = &Fenced{Lock: lock, Tokens: tokens, Key: FenceKey(p.Key)}
	default:
		if info.Backend == Backend {
			return nil, fmt.Errorf("%s: unknown token_source %q; expected incr or none", name, f)
		}
	}
	return lock, nil
}

// refuseIncr turns token_source: incr away, before the lock is built, from an
// algorithm that is not a decorator (Info.Fencing, fencing.go): one that
// fences its own leases would get a second token per grant, and one whose
// fencing is none has no token to give and nothing to count on.
func refuseIncr(name string, info Info, p Params) error {
	if p.Extra[ParamTokenSource] != "incr" {
		return nil
	}
	switch info.Fencing {
	case FencingDecorator:
		return nil
	case FencingBuiltIn:
		return fmt.Errorf("%s: token_source: incr is for a lock that hands out no fencing tokens, and %s's fencing is %s; expected token_source: none", name, name, info.Fencing)
	default:
		return fmt.Errorf("%s: token_source: incr cannot be added to %s, whose leases carry no fencing token (its fencing is %s); expected token_source: none", name, name, info.Fencing)
	}
}

// Lookup finds an algorithm by name.
func Lookup(name string) (Info, error) {
	i, ok := registry[name]
	if !ok {
		return Info{}, fmt.Errorf("unknown algorithm %q (known: %v)", name, Names())
	}
	return i, nil
}

// Names lists the registered algorithms in sorted order.
func Names() []string {
	var out []string
	for n, i := range registry {
		if !i.Hidden {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// token draws a random value that identifies one acquisition.
func token(env Env) string {
	return fmt.Sprintf("%016x", env.Rand().Uint64())
}

func needNodes(c Conns, n int, name string) error {
	if len(c.Redis) < n {
		return fmt.Errorf("%s needs %d redis node(s), got %d", name, n, len(c.Redis))
	}
	return nil
}

// Backend is the name of the Redis backend, whose algorithms are this
// package's (the other backends' algorithms declare theirs in their
// sub-package: pglock.Backend, gozk.Backend, …).
const Backend = "redis"

// Custom is the name under which a lock built outside the registry (a
// user's own lock, see locktest) appears in scenarios.
const Custom = "custom"

func init() {
	Register(Info{
		Name:     Custom,
		Summary:  "your own lock, supplied by a factory in Go (locktest)",
		Backend:  Backend,
		MinNodes: 1,
		Hidden:   true,
		New: func(p Params, c Conns) (Lock, error) {
			return nil, errors.New("the custom algorithm is built by a factory in Go; use package locktest")
		},
	})
}
