// Package explore draws random runs of a lock under faults (Explore) and
// shrinks a violating one to a minimal counterexample (Shrink), for
// 'locklab explore' and package locktest. It is a room of its own
// (docs/architecture.md, "Rooms and what they may import") because it is
// a client of the runner, not part of it: it builds scenarios and runs
// them, many at a time, and neither the file format nor the runner
// depends on it.
package explore

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// Exploration draws random runs, swarm style: for every run it draws which
// fault classes are on, a schedule from them, and a workload (how many
// clients, how many cycles, how long they work), so that each run probes a
// different corner instead of all runs averaging every fault together. The
// first violating run is shrunk to a minimal counterexample: fewer faults,
// smaller faults, fewer clients and cycles, as long as the same property
// stays violated. Every run is deterministic, so the counterexample replays
// byte for byte from its scenario file.

// Options configures Explore.
type Options struct {
	// Algorithm is a registered algorithm, or the display name of Factory.
	Algorithm string
	// Factory, when set, builds the lock under test instead of the registry
	// (a user's own lock, see package locktest).
	Factory algorithms.Factory
	// Base, when set, is the setup runs start from (nodes, TTL, resource);
	// by default the matrix setup of Algorithm.
	Base *scenarios.Scenario
	// Classes are the fault classes a run may draw from (default: all that
	// apply).
	Classes []faults.Class
	// Runs bounds the number of runs; Time bounds wall time. With neither,
	// 1000 runs.
	Runs int
	Time time.Duration
	// Seed picks the runs: the same seed explores the same runs.
	Seed uint64
	// Workers run in parallel (default: all cores); each run is
	// single-threaded and the result does not depend on Workers.
	Workers int
	// All collects every violating run instead of stopping at the first;
	// only the first is shrunk.
	All bool
	// NoShrink skips shrinking.
	NoShrink bool
	// MaxShrinkRuns bounds shrinking (default 2000 runs).
	MaxShrinkRuns int
	// Bubble runs every run inside the calling testing/synctest bubble,
	// one at a time (see runner.Options.Bubble): the caller's bubble has one
	// kernel. Runs that open bubbles of their own (Bubble unset) use
	// Workers. Faults on client clocks are left out there: the lock's code
	// reads the bubble's one virtual clock.
	Bubble bool
	// Prepare is passed to every run (runner.Options.Prepare).
	Prepare func(seed uint64)
	// KeepWorkload keeps Base's clients, cycles and work instead of drawing
	// them for each run.
	KeepWorkload bool
	// Progress is called after each run with the runs done and violations
	// found so far; it may be called from several goroutines at once.
	Progress func(runs, found int)
	// Context, when cancelled (Ctrl-C), stops the exploration: no new run
	// starts, shrinking stops at the smallest counterexample so far, and
	// the result covers what was done (Result.Interrupted).
	Context context.Context
	// MaxFindings bounds the violating runs kept with All (default 1000);
	// further ones are counted in Result.MoreFindings.
	MaxFindings int
	// Shard and Shards split one sweep across machines: with Shards > 1
	// only the runs whose index (1-based) is congruent to Shard (1..Shards)
	// modulo Shards are run. Run i's draw depends only on Seed and i, so
	// the shards of a sweep run exactly the sweep's runs, and the union of
	// their violating runs is the sweep's. Runs stays the sweep's bound on
	// the run index, not a number of runs per shard.
	Shard, Shards int
	// Persistence, when set ("none", "everysec", "always"), is what every
	// drawn restart of a Redis node remembers, instead of a drawn setting:
	// a user who runs Redis with appendfsync always tests that setup.
	Persistence string
	// Hunt, when set, names the properties a finding must violate
	// ("mutual_exclusion", "resource", "liveness"): a run that violates
	// only others is counted in Result.Unhunted and the exploration
	// goes on, so a user after an overlap is not stopped by the first
	// liveness failure (locktest's Options.Hunt).
	Hunt []string
}

// Finding is one violating run.
type Finding struct {
	// Run is the run's index (1-based) in the exploration.
	Run int
	// Property is the violated property shrinking preserved:
	// "mutual_exclusion", "resource" or "liveness".
	Property string
	// Scenario and Result are the run as drawn.
	Scenario *scenarios.Scenario
	Result   *runner.Result
	// Minimal and MinimalResult are the shrunk counterexample (nil when not
	// shrunk). Minimal.Seed is the seed to replay it with.
	Minimal       *scenarios.Scenario
	MinimalResult *runner.Result
	ShrinkRuns    int
	ShrinkTime    time.Duration
}

// Result is what Explore found.
type Result struct {
	Runs     int
	Findings []Finding
	// FoundAfter is the wall time until the first violating run finished.
	FoundAfter time.Duration
	Elapsed    time.Duration
	// Interrupted is set when the context was cancelled.
	Interrupted bool
	// MoreFindings counts violating runs beyond MaxFindings.
	MoreFindings int
	// Unhunted counts the runs that violated only properties
	// Options.Hunt left out; UnhuntedFirst is the first of them and
	// UnhuntedProperties what they violated, in scenarios.ViolatedProperty's order.
	Unhunted, UnhuntedFirst int
	UnhuntedProperties      []string
}

// Base returns the setup explore starts from for an algorithm: the
// matrix setup (TTL 2s, three clients, five nodes for quorum algorithms).
func Base(algorithm string) (*scenarios.Scenario, error) { return matrix.Base(algorithm) }

// exploreRun is run i's scenario: a swarm draw over base.
func exploreRun(base *scenarios.Scenario, classes []faults.Class, seed uint64, i int) *scenarios.Scenario {
	return exploreRunWith(base, classes, seed, i, false, false)
}

// exploreRunWith is exploreRun that may keep base's workload and leave out
// faults on client clocks (for runs in a bubble).
func exploreRunWith(base *scenarios.Scenario, classes []faults.Class, seed uint64, i int, keepWorkload, nodeClocksOnly bool) *scenarios.Scenario {
	h := fnv.New64a()
	fmt.Fprintf(h, "explore/%s/%d", base.Algorithm, seed)
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(i)))
	sc := base.Clone()
	sc.ID = fmt.Sprintf("explore-%s-%d-%d", base.Algorithm, seed, i)
	sc.Title = fmt.Sprintf("%s, run %d of 'locklab explore --seed %d'", base.Algorithm, i, seed)
	ttl := sc.TTL.D()
	sc.Clients.Count = 2 + rng.IntN(4)
	sc.Clients.Cycles = 1 + rng.IntN(3)
	// Work stays under the TTL: a fault-free run is then safe, so every
	// violation explore reports is caused by its faults.
	hi := time.Duration(float64(ttl) * (0.05 + 0.8*rng.Float64()))
	lo := time.Duration(float64(hi) * 0.5 * rng.Float64())
	sc.Clients.Work = scenarios.ExplicitRange(lo.Round(time.Millisecond), hi.Round(time.Millisecond))
	sc.Clients.Each = nil
	if keepWorkload {
		sc.Clients.Count, sc.Clients.Cycles, sc.Clients.Work = base.Clients.Count, base.Clients.Cycles, base.Clients.Work
		hi = base.Clients.Work.Max
	}
	scenarios.WithModeCycle(sc, scenarios.ModeCycle(base)) // readers stay readers (modes_explore.go)
	// Swarm: each enabled class is on for this run with probability 1/2.
	var on []faults.Class
	for _, c := range classes {
		if rng.IntN(2) == 0 {
			on = append(on, c)
		}
	}
	if len(on) == 0 {
		on = []faults.Class{classes[rng.IntN(len(classes))]}
	}
	// Faults fall while the clients are still busy: at most every client's
	// every cycle back to back.
	horizon := time.Duration(sc.Clients.Count*sc.Clients.Cycles) * (hi + 100*time.Millisecond)
	horizon = min(max(horizon, 500*time.Millisecond), matrix.Horizon)
	names := matrix.GeneratorNames(sc)
	sc.Faults = faults.Generate(rng, on, names, horizon, ttl)
	if nodeClocksOnly {
		clients := sc.ClientNames()
		sc.Faults = slices.DeleteFunc(sc.Faults, func(f faults.Fault) bool {
			return (f.Kind == faults.ClockJump || f.Kind == faults.Drift) && slices.Contains(clients, f.Target)
		})
	}
	sc.Expect = scenarios.Expect{}
	sc.Seed = rng.Uint64()>>1 | 1
	return sc
}

// withPersistence sets what each restart of a Redis node in sc remembers
// (the generator leaves Persistence empty on ZooKeeper servers, which log
// every write: those stay as drawn). The draw itself is unchanged, so the
// runs stay the runs of the same seed.
func withPersistence(sc *scenarios.Scenario, persistence string) {
	if persistence == "" {
		return
	}
	for i, f := range sc.Faults {
		if f.Kind == faults.NodeCrash && f.Persistence != "" {
			sc.Faults[i].Persistence = persistence
		}
	}
}

// unhuntedRun is a run that violated only what Options.Hunt leaves
// out.
type unhuntedRun struct {
	run int
	v   checker.Verdict
}

// HuntedProperty is the first violated property, in violatedProperty's
// order, among hunt (every property when hunt is empty), or "".
func HuntedProperty(v checker.Verdict, hunt []string) string {
	for _, p := range []string{"mutual_exclusion", "resource", "liveness"} {
		if scenarios.Violates(v, p) && (len(hunt) == 0 || slices.Contains(hunt, p)) {
			return p
		}
	}
	return ""
}

// summarizeUnhunted counts the runs that violated only what Hunt leaves
// out, up to the first finding (all of them with all): runs past the
// first finding may have run on other workers, so counting them would
// make the count depend on Workers.
func (out *Result) summarizeUnhunted(unhunted []unhuntedRun, all bool) {
	slices.SortFunc(unhunted, func(a, b unhuntedRun) int { return a.run - b.run })
	for _, u := range unhunted {
		if len(out.Findings) > 0 && !all && u.run >= out.Findings[0].Run {
			continue
		}
		if out.UnhuntedFirst == 0 {
			out.UnhuntedFirst = u.run
		}
		out.Unhunted++
		for _, p := range []string{"mutual_exclusion", "resource", "liveness"} {
			if scenarios.Violates(u.v, p) && !slices.Contains(out.UnhuntedProperties, p) {
				out.UnhuntedProperties = append(out.UnhuntedProperties, p)
			}
		}
	}
	order := map[string]int{"mutual_exclusion": 0, "resource": 1, "liveness": 2}
	slices.SortFunc(out.UnhuntedProperties, func(a, b string) int { return order[a] - order[b] })
}

// sweptRuns is the number of runs a sweep reports. Workers hand out run
// indices in order, and a run in flight when a lower one violates still
// finishes, so how many runs were done (done) depends on the machine's
// pace. What the sweep covered does not: every run of this shard up to
// the first violation (without all), or up to the bound. That is the
// count reported, the same with any worker count or load; only a sweep
// bounded by time or interrupted reports the runs it happened to do.
func sweptRuns(done, bound, firstBad int, all, bounded bool, shard, shards int) int {
	last := bound
	if firstBad != 0 && !all {
		last = firstBad
	} else if !bounded || bound <= 0 {
		return done
	}
	if last < shard {
		return 0
	}
	return (last-shard)/shards + 1
}

// Explore runs random schedules and workloads until a property is violated
// (or every run is done), then shrinks the first violating run.
func Explore(opt Options) (*Result, error) {
	defer runner.BeginSweep()()
	start := time.Now()
	base, usable, err := exploreSetup(opt)
	if err != nil {
		return nil, err
	}
	runs, workers, maxFindings, shard, shards, err := opt.sweep()
	if err != nil {
		return nil, err
	}
	runOpt := runner.Options{Factory: opt.Factory, NoTrace: true, Bubble: opt.Bubble, Prepare: opt.Prepare, Direct: true}
	ctx := cmp.Or(opt.Context, context.Background())
	more := 0
	var (
		unhunted []unhuntedRun // runs that violated only what Hunt leaves out
		next     atomic.Int64  // next run index to hand out
		done     atomic.Int64
		found    atomic.Int64
		firstBad atomic.Int64 // lowest violating index so far (0: none)
		firstAt  atomic.Int64
		mu       sync.Mutex
		hits     []Finding
		failure  error
		wg       sync.WaitGroup
	)
	deadline := opt.deadline(start)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				// The k-th run this shard hands out is the sweep's run
				// shard + (k-1)*shards.
				i := shard + int(next.Add(1)-1)*shards
				if runs > 0 && i > runs || ctx.Err() != nil {
					return
				}
				if !deadline.IsZero() && time.Now().After(deadline) {
					return
				}
				if fb := firstBad.Load(); fb != 0 && !opt.All && int64(i) > fb {
					return
				}
				sc := exploreRunWith(base, usable, opt.Seed, i, opt.KeepWorkload, opt.Bubble)
				withPersistence(sc, opt.Persistence)
				res, err := runner.Run(sc, sc.Seed, runOpt)
				done.Add(1)
				if err != nil {
					mu.Lock()
					if failure == nil {
						failure = fmt.Errorf("run %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
				prop := HuntedProperty(res.Report.Verdict, opt.Hunt)
				if prop == "" && scenarios.ViolatedProperty(res.Report.Verdict) != "" {
					mu.Lock()
					unhunted = append(unhunted, unhuntedRun{i, res.Report.Verdict})
					mu.Unlock()
				}
				if prop != "" {
					found.Add(1)
					firstAt.CompareAndSwap(0, int64(time.Since(start)))
					lowerTo(&firstBad, int64(i))
					mu.Lock()
					hits = append(hits, Finding{Run: i, Property: prop, Scenario: sc, Result: res})
					if len(hits) > 2*maxFindings {
						// Keep the lowest-numbered runs only: memory stays
						// bounded however long --all runs.
						slices.SortFunc(hits, func(a, b Finding) int { return a.Run - b.Run })
						more += len(hits) - maxFindings
						hits = hits[:maxFindings]
					}
					mu.Unlock()
				}
				if opt.Progress != nil {
					opt.Progress(int(done.Load()), int(found.Load()))
				}
			}
		}()
	}
	wg.Wait()
	if failure != nil {
		return nil, failure
	}
	hits, more = keepFindings(hits, more, opt.All, maxFindings)
	out := &Result{Runs: sweptRuns(int(done.Load()), runs, int(firstBad.Load()), opt.All, deadline.IsZero() && ctx.Err() == nil, shard, shards), Findings: hits, FoundAfter: time.Duration(firstAt.Load()), MoreFindings: more}
	out.summarizeUnhunted(unhunted, opt.All)
	out.Interrupted = ctx.Err() != nil
	if len(hits) > 0 && !opt.NoShrink {
		out.shrinkFirst(ctx, opt)
	}
	out.Elapsed = time.Since(start)
	return out, nil
}

// deadline is when a sweep bounded by Time stops (zero: none).
func (opt Options) deadline(start time.Time) time.Time {
	if opt.Time > 0 {
		return start.Add(opt.Time)
	}
	return time.Time{}
}

// lowerTo sets v to i unless it already holds a lower index (0: none).
func lowerTo(v *atomic.Int64, i int64) {
	for {
		fb := v.Load()
		if fb != 0 && fb <= i || v.CompareAndSwap(fb, i) {
			return
		}
	}
}

// shrinkFirst shrinks the first finding. Shrinking stops at once when
// interrupted and keeps the smallest counterexample found so far (the
// drawn run itself at worst).
func (out *Result) shrinkFirst(ctx context.Context, opt Options) {
	f := &out.Findings[0]
	t0 := time.Now()
	f.Minimal, f.MinimalResult, f.ShrinkRuns = Shrink(f.Scenario, f.Property, ShrinkOptions{Factory: opt.Factory, MaxRuns: opt.MaxShrinkRuns, Context: ctx, Bubble: opt.Bubble, Prepare: opt.Prepare})
	f.ShrinkTime = time.Since(t0)
	out.Interrupted = ctx.Err() != nil
}

// sweep is what an exploration sweeps, from its options and their
// defaults: the runs (0: until Time), the workers (one in a bubble: one
// kernel per bubble at a time), the findings kept, and this shard.
func (opt Options) sweep() (runs, workers, maxFindings, shard, shards int, err error) {
	runs = opt.Runs
	if runs == 0 && opt.Time == 0 {
		runs = 1000
	}
	workers = opt.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	if opt.Bubble {
		workers = 1
	}
	maxFindings = opt.MaxFindings
	if maxFindings <= 0 {
		maxFindings = 1000
	}
	shard, shards = opt.Shard, opt.Shards
	if shards <= 1 {
		shard, shards = 1, 1
	}
	if shard < 1 || shard > shards {
		return 0, 0, 0, 0, 0, fmt.Errorf("shard %d of %d: expected a shard between 1 and %d", shard, shards, shards)
	}
	for _, p := range opt.Hunt {
		if !slices.Contains([]string{"mutual_exclusion", "resource", "liveness"}, p) {
			return 0, 0, 0, 0, 0, fmt.Errorf("hunt %q: expected mutual_exclusion, resource or liveness", p)
		}
	}
	return runs, workers, maxFindings, shard, shards, nil
}

// keepFindings makes the result deterministic whatever the worker count:
// the lowest-numbered violating run (or, with all, every one in run order,
// at most maxFindings of them; more counts the rest).
func keepFindings(hits []Finding, more int, all bool, maxFindings int) ([]Finding, int) {
	slices.SortFunc(hits, func(a, b Finding) int { return a.Run - b.Run })
	if !all && len(hits) > 1 {
		hits = hits[:1]
	}
	if len(hits) > maxFindings {
		more += len(hits) - maxFindings
		hits = hits[:maxFindings]
	}
	return hits, more
}

// exploreSetup is the base scenario and the fault classes that can act
// on it, from which Explore draws its runs.
func exploreSetup(opt Options) (*scenarios.Scenario, []faults.Class, error) {
	base := opt.Base
	if base == nil {
		var err error
		if base, err = Base(opt.Algorithm); err != nil {
			return nil, nil, err
		}
	}
	classes := opt.Classes
	if len(classes) == 0 {
		classes = faults.Classes()
	}
	names := matrix.GeneratorNames(base)
	var usable []faults.Class
	for _, c := range classes {
		if faults.Applicable(c, names) {
			usable = append(usable, c)
		}
	}
	if len(usable) == 0 {
		return nil, nil, fmt.Errorf("none of the fault classes %v can act on %s", classes, base.Algorithm)
	}
	return base, usable, nil
}

// Draw is run i (1-based) of the exploration opt describes, exactly
// as Explore draws it: a sweep split across processes (Shard) names its
// violating runs by index, and whoever gathers them rebuilds the lowest
// one with this to shrink it.
func Draw(opt Options, i int) (*scenarios.Scenario, error) {
	base, usable, err := exploreSetup(opt)
	if err != nil {
		return nil, err
	}
	sc := exploreRunWith(base, usable, opt.Seed, i, opt.KeepWorkload, opt.Bubble)
	withPersistence(sc, opt.Persistence)
	return sc, nil
}
