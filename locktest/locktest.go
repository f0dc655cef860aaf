// Package locktest puts the Redis lock you ship — a library such as
// go-redsync/redsync or bsm/redislock, or your own code with a renewal
// goroutine — under locklab's faults from a Go test, unmodified:
//
//	func TestRedsync(t *testing.T) {
//		locktest.Run(t, func(clients []*redis.Client) locktest.Lock {
//			m := redsync.New(goredis.NewPool(clients[0])).NewMutex("lock", redsync.WithExpiry(2*time.Second))
//			return locktest.Funcs{
//				LockFunc:   m.LockContext,
//				UnlockFunc: func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err },
//			}
//		}, locktest.Options{TTL: 2 * time.Second, Expect: locktest.Expect{
//			locktest.Pause: locktest.Resource, locktest.Clock: locktest.MutualExclusion | locktest.Resource,
//		}})
//	}
//
// Run gives one subtest per fault class (go test -run TestRedsync/pause).
// Each explores random runs of that class: simulated Redis nodes whose
// clocks jump, replies that are lost, clients that pause or crash. The
// lock's code runs inside a testing/synctest bubble, so its goroutines,
// sleeps, timers, time.Now and context deadlines all follow virtual time,
// and a seed decides a run byte for byte. A class whose outcome differs from
// Options.Expect fails with a minimal counterexample, its witness, a
// failfile under testdata/locktest/<Test>/<class>.yaml (replayed first on
// the next run, as rapid does) and the go test command that replays it.
package locktest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/redis/go-redis/v9"
)

// Lock is the lock under test, as its users call it.
type Lock interface {
	// Lock takes the lock once; an error (busy, timeout) means not taken,
	// and the harness tries again a little later. Retries and waits of the
	// lock's own are welcome.
	Lock(ctx context.Context) error
	// Unlock releases it.
	Unlock(ctx context.Context) error
}

// TokenLock is a lock whose Lock hands out a fencing token. With
// Options.Fencing the protected resource checks it and refuses a token
// lower than one it has seen (Kleppmann's fencing).
type TokenLock interface {
	LockToken(ctx context.Context) (token int64, err error)
	Unlock(ctx context.Context) error
}

// LossReporter is a lock that tells its holder when it learns its lease is
// gone (a renewal found the key expired or taken). The harness then ends
// the client's hold and the worker skips its write, as a careful holder
// does. Lost is asked after each successful Lock; the channel is closed on
// loss.
type LossReporter interface {
	Lost() <-chan struct{}
}

// Funcs adapts two functions to Lock.
type Funcs struct {
	LockFunc   func(ctx context.Context) error
	UnlockFunc func(ctx context.Context) error
}

func (f Funcs) Lock(ctx context.Context) error   { return f.LockFunc(ctx) }
func (f Funcs) Unlock(ctx context.Context) error { return f.UnlockFunc(ctx) }

// TokenFuncs adapts two functions to TokenLock (and Lock).
type TokenFuncs struct {
	LockFunc   func(ctx context.Context) (int64, error)
	UnlockFunc func(ctx context.Context) error
}

func (f TokenFuncs) LockToken(ctx context.Context) (int64, error) { return f.LockFunc(ctx) }
func (f TokenFuncs) Lock(ctx context.Context) error {
	_, err := f.LockFunc(ctx)
	return err
}
func (f TokenFuncs) Unlock(ctx context.Context) error { return f.UnlockFunc(ctx) }

// Factory builds one client's lock from its connections: one go-redis
// client per simulated Redis node (masters only), in node order. It is
// called once per client per run.
type Factory func(clients []*redis.Client) Lock

// Class is a family of faults; each is one subtest of Run.
type Class = faults.Class

// The fault classes. Client clocks cannot jump or drift inside one bubble
// (the lock's code reads the bubble's one virtual clock), so Clock and
// Drift act on the Redis nodes' clocks only.
const (
	Clock     = faults.ClassClock     // a node's clock jumps, forward or backward
	Drift     = faults.ClassDrift     // a node's clock runs fast or slow
	Pause     = faults.ClassPause     // a client stops (GC, SIGSTOP), sometimes past the TTL
	Drop      = faults.ClassDrop      // requests or replies are lost
	Delay     = faults.ClassDelay     // messages arrive late
	Crash     = faults.ClassCrash     // a client dies
	Restart   = faults.ClassRestart   // a node restarts with what it persisted
	Partition = faults.ClassPartition // partitions that heal
)

// Outcome is what a class of faults may do to the lock: Safe, or the
// properties it may violate, or Any.
type Outcome uint8

const (
	// Safe: no run may violate anything.
	Safe Outcome = 0
	// MutualExclusion: two clients hold the lock at once.
	MutualExclusion Outcome = 1 << iota
	// Resource: the protected resource sees a lost update or a stale token.
	Resource
	// Liveness: the lock stays unavailable with nobody holding it.
	Liveness
	// AtMost, or-ed with properties, asserts no more than them: the class
	// may stay safe or violate those only. Expect{Drop: AtMost | Liveness}
	// reads "safe, or liveness only"; without AtMost, an expectation of
	// properties asserts that one of them is violated.
	AtMost Outcome = 1 << 6
	// Any: report what happens, assert nothing.
	Any Outcome = 1 << 7
)

func (o Outcome) String() string { return o.named(" or ", "mutual exclusion") }

// found renders an outcome that happened: "mutual exclusion and resource
// violated".
func (o Outcome) found() string { return o.named(" and ", "mutual exclusion") }

// named renders the outcome with me as the name of MutualExclusion (a
// semaphore's permit limit, a reader-writer lock's exclusion).
func (o Outcome) named(sep, me string) string {
	if o&Any != 0 {
		return "any"
	}
	prefix := ""
	if o&AtMost != 0 {
		o &^= AtMost
		if o == Safe {
			return "safe"
		}
		prefix, sep = "at most ", " and "
	}
	if o == Safe {
		return "safe"
	}
	var parts []string
	for _, p := range []struct {
		o    Outcome
		name string
	}{{MutualExclusion, me}, {Resource, "resource"}, {Liveness, "liveness"}} {
		if o&p.o != 0 {
			parts = append(parts, p.name)
		}
	}
	return prefix + strings.Join(parts, sep) + " violated"
}

// Expect maps a fault class to the outcome CI asserts for it. A class not
// in the map is expected Safe.
type Expect map[Class]Outcome

// Hunt maps a fault class to the properties its exploration looks for.
type Hunt map[Class]Outcome

// properties names the outcome's properties as explore.Explore does
// (nil: all of them).
func (h Hunt) properties(c Class) []string {
	o, ok := h[c]
	if !ok || o&(MutualExclusion|Resource|Liveness) == 0 {
		return nil
	}
	var out []string
	for _, p := range []struct {
		o    Outcome
		name string
	}{{MutualExclusion, "mutual_exclusion"}, {Resource, "resource"}, {Liveness, "liveness"}} {
		if o&p.o != 0 {
			out = append(out, p.name)
		}
	}
	return out
}

// Options tune Run. TTL is required; everything else has a default.
type Options struct {
	// TTL is the lease your lock takes, and it must match the lock's own
	// TTL: faults (pauses, delays, stalls) and the liveness bound are
	// scaled to it. It does not end a hold: as everywhere in locklab
	// (package checker), a client holds from the return of Lock until it
	// calls Unlock, crashes or learns it lost the lock (LossReporter); a
	// deadline your code never consults does not stop it from acting.
	TTL time.Duration
	// Renews says the lock extends its lease while held (a watchdog or a
	// renewal goroutine): the work may then outlast TTL.
	Renews bool
	// Fencing: Lock returns a token (the lock is a TokenLock) and the
	// protected resource refuses tokens lower than one it has seen.
	Fencing bool

	// Nodes is the number of Redis masters (default 1; 5 for a Redlock).
	Nodes int
	// Replicas is the number of asynchronous replicas of each master
	// (default 0), replicating with a lag of 100ms.
	Replicas int
	// Persistence is what a restarted node remembers: "everysec" or
	// "always" (appendfsync), or "none". Set, it is the setting of every
	// restart the restart class draws; unset, each restart draws one of
	// the three.
	Persistence string

	// FaultStore lets the fault classes act on the protected resource's
	// store too: the workers' reads and writes of it can then be lost,
	// delayed or cut off, as a real store's network may. By default the
	// faults act on the lock's traffic only: a worker whose write to the
	// store is lost waits for it and carries its hold past the TTL, which
	// no lock can prevent and which looks like a bug in the lock
	// (scenarios.Resource.Reliable).
	FaultStore bool

	// Clients is the number of clients (default: drawn from 2 to 5 per run).
	Clients int
	// Cycles is the number of lock/work/unlock cycles per client (default:
	// drawn from 1 to 3 per run, or 2 when Clients or Work is set).
	Cycles int
	// Work is the longest time a client works while holding the lock
	// (default: drawn per run, below TTL); each cycle draws from Work/2 to
	// Work.
	Work time.Duration
	// Duration is the simulated length of a run (default 20s).
	Duration time.Duration

	// Classes are the fault classes to test, one subtest each (default:
	// every class and Stall, and Failover when there are Replicas).
	Classes []Class
	// Expect is the outcome asserted per class (default Safe).
	Expect Expect
	// Hunt names, per class, the properties the exploration looks for
	// (MutualExclusion, Resource, Liveness, or-ed). By default the first
	// run that violates anything ends the class; with Hunt{Pause:
	// MutualExclusion} a run that violates only liveness is counted, logged
	// and passed over, and the class ends at the first overlap (or after
	// Runs without one). Hunting changes what is found, never what is
	// judged: the finding is still judged against Expect with every
	// property it violates. A class not in the map hunts everything.
	Hunt Hunt
	// Runs is the number of random runs per class (default 40, and 400
	// for Restart; ten times as many in the project's deep suite,
	// LOCKLAB_DEEP=1; flag -locktest.runs). See defaultRuns.
	Runs int
	// Seed picks the runs (default 1; flag -locktest.seed). A class's saved
	// counterexample (failfile) is replayed before exploring, unless
	// -locktest.seed is given: that seed is then explored and the log says
	// the failfile was not replayed.
	Seed uint64
	// Replay, when set, is a counterexample file (a failfile, or a scenario
	// written by locklab) that every class replays instead of exploring, as
	// the -locktest.replay flag does: the class passes or fails on that one
	// run. Replay a failfile from code by pointing Replay at it, restricted
	// to its class with Classes: a file made for another test, class, lock
	// or store setting is refused, and the class fails (madefor.go).
	Replay string
	// ShrinkRuns bounds the runs spent shrinking a counterexample
	// (default 80).
	ShrinkRuns int
	// Database sets up the simulated database of RunPostgres and RunSQL
	// (database.go); the other routes refuse it.
	Database Database
	// ZooKeeper sets up the simulated ensemble of RunZooKeeper
	// (zookeeper.go); the other routes refuse it.
	ZooKeeper ZooKeeper
	// Workers, above 1, splits each class's exploration across that many
	// worker processes (flag -locktest.workers): copies of the test
	// binary, each running one shard of the runs (explore.Options
	// Shard). A library's goroutines draw from process-wide random sources
	// (redsync's retry delays from math/rand), so its runs cannot share a
	// process; processes can. The lowest violating run is the one one
	// process would have found first, and this process shrinks it: the
	// counterexample is the same whatever Workers is. Classes drawn by
	// locktest itself (Failover, Stall) and a saved failfile's replay stay
	// in this process.
	Workers int

	// failover draws the failover class's runs instead of failoverRun
	// (a database's standby, database.go).
	failover func(base *scenarios.Scenario, opt Options, seed uint64, i int) *scenarios.Scenario
	// caller is where the user's test called Run (file:line), named in
	// every verdict line: a class's subtest has no frame of the user's.
	caller string
}

// defaultRuns is the number of runs of class when Options.Runs is not
// set, chosen so that the classic failure of each primitive on the bubble
// path is found within it for every seed from 1 to 20
// (BenchmarkTimeToFind; BENCHMARKS.md, "Time to find on the bubble
// path"): outside restart the first violating run came at most at run 33
// (a 2-permit semaphore paused; redsync's Redlock under a clock jump at
// 32), so 40 finds every one. Under restart it came as late as run 383:
// redsync's 5-pool Redlock loses its majority to restarted nodes between
// run 10 and run 383 (seeds 4, 6, 9 and 10 past the former default of
// 250), a 2-permit semaphore by run 226. So restart explores 400 runs and
// the other classes 40. An exploration stops at its first violation, so a
// lock that breaks pays only for the runs up to it (a whole Run of redsync
// with the default options costs what it did at 250: its restart class
// breaks at run 140); a lock that survives restart pays the 400. The
// nightly deep suite (LOCKLAB_DEEP=1, what `bash scripts/test.sh --deep`
// sets) looks ten times as hard.
func defaultRuns(class Class) int {
	n := 40
	if class == Restart {
		n = 400
	}
	if os.Getenv("LOCKLAB_DEEP") == "1" {
		n *= 10
	}
	return n
}

func (o *Options) defaults() error {
	if o.TTL <= 0 {
		return fmt.Errorf("locktest: Options.TTL: expected the TTL your lock uses, such as 2*time.Second, got %v", o.TTL)
	}
	if o.Nodes < 0 || o.Replicas < 0 || o.Clients < 0 || o.Cycles < 0 || o.Work < 0 || o.Duration < 0 || o.Runs < 0 {
		return fmt.Errorf("locktest: Options: Nodes, Replicas, Clients, Cycles, Work, Duration and Runs must not be negative")
	}
	switch o.Persistence {
	case "", "none", "everysec", "always":
	default:
		return fmt.Errorf("locktest: Options.Persistence: unknown %q; expected none, everysec or always", o.Persistence)
	}
	if o.Work >= o.TTL && !o.Renews {
		return fmt.Errorf("locktest: Options.Work: %v is not below the TTL %v; a fault-free run would then break the lock", o.Work, o.TTL)
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.ShrinkRuns == 0 {
		o.ShrinkRuns = 80
	}
	known := append(faults.Classes(), Stall, Failover)
	if len(o.Classes) == 0 {
		o.Classes = append(faults.Classes(), Stall)
		if o.Replicas > 0 {
			o.Classes = known
		}
	}
	for _, c := range o.Classes {
		if !slices.Contains(known, c) {
			return fmt.Errorf("locktest: Options.Classes: unknown fault class %q; expected one of %v", c, known)
		}
	}
	for c := range o.Expect {
		if !slices.Contains(known, c) {
			return fmt.Errorf("locktest: Options.Expect: unknown fault class %q; expected one of %v", c, known)
		}
	}
	return nil
}

type randKey struct{}

// LockValue returns a random lock value (the owner's value a release
// compares, the course's "lock value") drawn from the run's seeded source,
// for locks that take one from the caller, such as bsm/redislock's
// Options.Token. Values a library draws from crypto/rand are made
// deterministic by Run as well.
func LockValue(ctx context.Context) string {
	if r, ok := ctx.Value(randKey{}).(*rand.Rand); ok {
		return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
	}
	return fmt.Sprintf("%016x", rand.Uint64())
}

// Token is LockValue under its old name: in locklab a token is always a
// fencing token (issue 33's one word for each).
//
// Deprecated: use LockValue.
func Token(ctx context.Context) string { return LockValue(ctx) }

// route is the way a locktest entry point builds its scenario: Run and
// RunShared on Redis nodes, RunPostgres, RunSQL and RunMySQLDSN on a
// database, RunZooKeeper on the ensemble. Each route reads its own part of
// Options (Database, ZooKeeper).
type route int

const (
	routeRedis route = iota
	routeDatabase
	routeZooKeeper
)

// refuseForeign refuses the options of another route than the one called:
// an option that would be ignored is an error, not a silence.
func (o *Options) refuseForeign(r route) error {
	if r != routeDatabase && (len(o.Database.Params) > 0 || o.Database.PoolSize != 0) {
		return fmt.Errorf("locktest: Options.Database is for RunPostgres, RunSQL and RunMySQLDSN; this test's lock is not on a database")
	}
	if r != routeZooKeeper && len(o.ZooKeeper.Params) > 0 {
		return fmt.Errorf("locktest: Options.ZooKeeper is for RunZooKeeper; this test's lock is not on ZooKeeper")
	}
	return nil
}
