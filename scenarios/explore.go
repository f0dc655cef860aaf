package scenarios

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
)

// Exploration draws random runs, swarm style: for every run it draws which
// fault classes are on, a schedule from them, and a workload (how many
// clients, how many cycles, how long they work), so that each run probes a
// different corner instead of all runs averaging every fault together. The
// first violating run is shrunk to a minimal counterexample: fewer faults,
// smaller faults, fewer clients and cycles, as long as the same property
// stays violated. Every run is deterministic, so the counterexample replays
// byte for byte from its scenario file.

// ExploreOptions configures Explore.
type ExploreOptions struct {
	// Algorithm is a registered algorithm, or the display name of Factory.
	Algorithm string
	// Factory, when set, builds the lock under test instead of the registry
	// (a user's own lock, see package locktest).
	Factory algorithms.Factory
	// Base, when set, is the setup runs start from (nodes, TTL, resource);
	// by default the matrix setup of Algorithm.
	Base *Scenario
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
	// one at a time (see Options.Bubble): the caller's bubble has one
	// kernel. Runs that open bubbles of their own (Bubble unset) use
	// Workers. Faults on client clocks are left out there: the lock's code
	// reads the bubble's one virtual clock.
	Bubble bool
	// Prepare is passed to every run (Options.Prepare).
	Prepare func(seed uint64)
	// KeepWorkload keeps Base's clients, cycles and work instead of drawing
	// them for each run.
	KeepWorkload bool
	// Progress is called after each run with the runs done and violations
	// found so far; it may be called from several goroutines at once.
	Progress func(runs, found int)
	// Context, when cancelled (Ctrl-C), stops the exploration: no new run
	// starts, shrinking stops at the smallest counterexample so far, and
	// the result covers what was done (ExploreResult.Interrupted).
	Context context.Context
	// MaxFindings bounds the violating runs kept with All (default 1000);
	// further ones are counted in ExploreResult.MoreFindings.
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
	// only others is counted in ExploreResult.Unhunted and the exploration
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
	Scenario *Scenario
	Result   *Result
	// Minimal and MinimalResult are the shrunk counterexample (nil when not
	// shrunk). Minimal.Seed is the seed to replay it with.
	Minimal       *Scenario
	MinimalResult *Result
	ShrinkRuns    int
	ShrinkTime    time.Duration
}

// ExploreResult is what Explore found.
type ExploreResult struct {
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
	// ExploreOptions.Hunt left out; UnhuntedFirst is the first of them and
	// UnhuntedProperties what they violated, in violatedProperty's order.
	Unhunted, UnhuntedFirst int
	UnhuntedProperties      []string
}

// ExploreBase returns the setup explore starts from for an algorithm: the
// matrix setup (TTL 2s, three clients, five nodes for quorum algorithms).
func ExploreBase(algorithm string) (*Scenario, error) { return MatrixScenario(algorithm) }

// exploreRun is run i's scenario: a swarm draw over base.
func exploreRun(base *Scenario, classes []faults.Class, seed uint64, i int) *Scenario {
	return exploreRunWith(base, classes, seed, i, false, false)
}

// exploreRunWith is exploreRun that may keep base's workload and leave out
// faults on client clocks (for runs in a bubble).
func exploreRunWith(base *Scenario, classes []faults.Class, seed uint64, i int, keepWorkload, nodeClocksOnly bool) *Scenario {
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
	sc.Clients.Work = Range{Min: lo.Round(time.Millisecond), Max: hi.Round(time.Millisecond), set: true}
	sc.Clients.Each = nil
	if keepWorkload {
		sc.Clients.Count, sc.Clients.Cycles, sc.Clients.Work = base.Clients.Count, base.Clients.Cycles, base.Clients.Work
		hi = base.Clients.Work.Max
	}
	withModeCycle(sc, modeCycle(base)) // readers stay readers (modes_explore.go)
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
	horizon = min(max(horizon, 500*time.Millisecond), MatrixHorizon)
	names := generatorNames(sc)
	sc.Faults = faults.Generate(rng, on, names, horizon, ttl)
	if nodeClocksOnly {
		clients := sc.ClientNames()
		sc.Faults = slices.DeleteFunc(sc.Faults, func(f faults.Fault) bool {
			return (f.Kind == faults.ClockJump || f.Kind == faults.Drift) && slices.Contains(clients, f.Target)
		})
	}
	sc.Expect = Expect{}
	sc.Seed = rng.Uint64()>>1 | 1
	return sc
}

// withPersistence sets what each restart of a Redis node in sc remembers
// (the generator leaves Persistence empty on ZooKeeper servers, which log
// every write: those stay as drawn). The draw itself is unchanged, so the
// runs stay the runs of the same seed.
func withPersistence(sc *Scenario, persistence string) {
	if persistence == "" {
		return
	}
	for i, f := range sc.Faults {
		if f.Kind == faults.NodeCrash && f.Persistence != "" {
			sc.Faults[i].Persistence = persistence
		}
	}
}

// violatedProperty is the first violated property in the order mutual
// exclusion, resource, liveness, or "".
func violatedProperty(v checker.Verdict) string {
	switch {
	case v.MutualExclusion == checker.Violated:
		return "mutual_exclusion"
	case v.Resource == checker.Violated:
		return "resource"
	case v.Liveness == checker.Violated:
		return "liveness"
	}
	return ""
}

// unhuntedRun is a run that violated only what ExploreOptions.Hunt leaves
// out.
type unhuntedRun struct {
	run int
	v   checker.Verdict
}

// HuntedProperty is the first violated property, in violatedProperty's
// order, among hunt (every property when hunt is empty), or "".
func HuntedProperty(v checker.Verdict, hunt []string) string {
	for _, p := range []string{"mutual_exclusion", "resource", "liveness"} {
		if violates(v, p) && (len(hunt) == 0 || slices.Contains(hunt, p)) {
			return p
		}
	}
	return ""
}

func violates(v checker.Verdict, prop string) bool {
	switch prop {
	case "mutual_exclusion":
		return v.MutualExclusion == checker.Violated
	case "resource":
		return v.Resource == checker.Violated
	case "liveness":
		return v.Liveness == checker.Violated
	}
	return false
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
func Explore(opt ExploreOptions) (*ExploreResult, error) {
	defer BeginSweep()()
	start := time.Now()
	base, usable, err := exploreSetup(opt)
	if err != nil {
		return nil, err
	}
	runs := opt.Runs
	if runs == 0 && opt.Time == 0 {
		runs = 1000
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	if opt.Bubble {
		workers = 1 // one kernel per bubble at a time
	}
	runOpt := Options{Factory: opt.Factory, NoTrace: true, Bubble: opt.Bubble, Prepare: opt.Prepare, Direct: true}
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	maxFindings := opt.MaxFindings
	if maxFindings <= 0 {
		maxFindings = 1000
	}
	more := 0
	var unhunted []unhuntedRun // runs that violated only what Hunt leaves out
	for _, p := range opt.Hunt {
		if !slices.Contains([]string{"mutual_exclusion", "resource", "liveness"}, p) {
			return nil, fmt.Errorf("hunt %q: expected mutual_exclusion, resource or liveness", p)
		}
	}

	var (
		next     atomic.Int64 // next run index to hand out
		done     atomic.Int64
		found    atomic.Int64
		firstBad atomic.Int64 // lowest violating index so far (0: none)
		firstAt  atomic.Int64
		mu       sync.Mutex
		hits     []Finding
		failure  error
		wg       sync.WaitGroup
	)
	deadline := time.Time{}
	if opt.Time > 0 {
		deadline = start.Add(opt.Time)
	}
	shard, shards := opt.Shard, opt.Shards
	if shards <= 1 {
		shard, shards = 1, 1
	}
	if shard < 1 || shard > shards {
		return nil, fmt.Errorf("shard %d of %d: expected a shard between 1 and %d", shard, shards, shards)
	}
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
				res, err := Run(sc, sc.Seed, runOpt)
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
				if prop == "" && violatedProperty(res.Report.Verdict) != "" {
					mu.Lock()
					unhunted = append(unhunted, unhuntedRun{i, res.Report.Verdict})
					mu.Unlock()
				}
				if prop != "" {
					found.Add(1)
					firstAt.CompareAndSwap(0, int64(time.Since(start)))
					for {
						fb := firstBad.Load()
						if fb != 0 && fb <= int64(i) || firstBad.CompareAndSwap(fb, int64(i)) {
							break
						}
					}
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
	// Deterministic result whatever the worker count: the lowest-numbered
	// violating run (or all of them, in run order).
	slices.SortFunc(hits, func(a, b Finding) int { return a.Run - b.Run })
	if !opt.All && len(hits) > 1 {
		hits = hits[:1]
	}
	if len(hits) > maxFindings {
		more += len(hits) - maxFindings
		hits = hits[:maxFindings]
	}
	// Runs past the first finding may have run on other workers; they
	// are not counted, so the count does not depend on Workers.
	slices.SortFunc(unhunted, func(a, b unhuntedRun) int { return a.run - b.run })
	unhuntedFirst, nUnhunted := 0, 0
	var unhuntedProps []string
	for _, u := range unhunted {
		if len(hits) == 0 || opt.All || u.run < hits[0].Run {
			if unhuntedFirst == 0 {
				unhuntedFirst = u.run
			}
			nUnhunted++
			for _, p := range []string{"mutual_exclusion", "resource", "liveness"} {
				if violates(u.v, p) && !slices.Contains(unhuntedProps, p) {
					unhuntedProps = append(unhuntedProps, p)
				}
			}
		}
	}
	order := map[string]int{"mutual_exclusion": 0, "resource": 1, "liveness": 2}
	slices.SortFunc(unhuntedProps, func(a, b string) int { return order[a] - order[b] })
	out := &ExploreResult{Runs: sweptRuns(int(done.Load()), runs, int(firstBad.Load()), opt.All, deadline.IsZero() && ctx.Err() == nil, shard, shards), Findings: hits, FoundAfter: time.Duration(firstAt.Load()), MoreFindings: more, Unhunted: nUnhunted, UnhuntedFirst: unhuntedFirst, UnhuntedProperties: unhuntedProps}
	out.Interrupted = ctx.Err() != nil
	if len(hits) > 0 && !opt.NoShrink {
		f := &out.Findings[0]
		t0 := time.Now()
		// Shrinking stops at once when interrupted and keeps the smallest
		// counterexample found so far (the drawn run itself at worst).
		f.Minimal, f.MinimalResult, f.ShrinkRuns = Shrink(f.Scenario, f.Property, ShrinkOptions{Factory: opt.Factory, MaxRuns: opt.MaxShrinkRuns, Context: ctx, Bubble: opt.Bubble, Prepare: opt.Prepare})
		f.ShrinkTime = time.Since(t0)
		out.Interrupted = ctx.Err() != nil
	}
	out.Elapsed = time.Since(start)
	return out, nil
}

// exploreSetup is the base scenario and the fault classes that can act
// on it, from which Explore draws its runs.
func exploreSetup(opt ExploreOptions) (*Scenario, []faults.Class, error) {
	base := opt.Base
	if base == nil {
		var err error
		if base, err = ExploreBase(opt.Algorithm); err != nil {
			return nil, nil, err
		}
	}
	classes := opt.Classes
	if len(classes) == 0 {
		classes = faults.Classes()
	}
	names := generatorNames(base)
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

// ExploreRun is run i (1-based) of the exploration opt describes, exactly
// as Explore draws it: a sweep split across processes (Shard) names its
// violating runs by index, and whoever gathers them rebuilds the lowest
// one with this to shrink it.
func ExploreRun(opt ExploreOptions, i int) (*Scenario, error) {
	base, usable, err := exploreSetup(opt)
	if err != nil {
		return nil, err
	}
	sc := exploreRunWith(base, usable, opt.Seed, i, opt.KeepWorkload, opt.Bubble)
	withPersistence(sc, opt.Persistence)
	return sc, nil
}

// ShrinkOptions tunes Shrink.
type ShrinkOptions struct {
	Factory algorithms.Factory
	// MaxRuns bounds the number of candidate runs (default 2000).
	MaxRuns int
	// Context, when cancelled, ends shrinking with the smallest
	// counterexample so far.
	Context context.Context
	// Bubble runs inside the calling synctest bubble (Options.Bubble).
	Bubble  bool
	Prepare func(seed uint64)
}

// Shrink looks for a simpler scenario that, run with the same seed, still
// violates prop: it repeatedly takes the first simpler neighbour that does
// (fewer faults, smaller faults, earlier faults, fewer clients, fewer
// cycles, shorter work) until none does. The result's expectation is set to
// exactly the violated property, so 'locklab run FILE' exits 0 when it
// reproduces the counterexample.
func Shrink(sc *Scenario, prop string, opt ShrinkOptions) (*Scenario, *Result, int) {
	defer BeginSweep()()
	maxRuns := opt.MaxRuns
	if maxRuns == 0 {
		maxRuns = 2000
	}
	runOpt := Options{Factory: opt.Factory, NoTrace: true, Bubble: opt.Bubble, Prepare: opt.Prepare, Direct: true}
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	cur := sc.Clone()
	curRes, err := Run(cur, cur.Seed, runOpt)
	if err != nil || !violates(curRes.Report.Verdict, prop) {
		return nil, nil, 1
	}
	runs := 1
	try := func(cands []*Scenario) bool {
		for _, cand := range cands {
			if runs >= maxRuns || ctx.Err() != nil {
				return false
			}
			runs++
			res, err := Run(cand, cand.Seed, runOpt)
			if err == nil && violates(res.Report.Verdict, prop) {
				cur, curRes = cand, res
				return true
			}
		}
		return false
	}
	for {
		for try(shrinkCandidates(cur)) {
		}
		// Greedy steps remove one thing at a time; a counterexample that
		// needs a lucky interleaving may survive no single step. Try the
		// smallest workload in one jump, under many seeds, then go on.
		if cur.Clients.Count <= 2 || !try(smallestWorkload(cur, 200)) {
			break
		}
	}
	// The counterexample's own run, traced, is the one to show and replay;
	// its events are kept, as for 'locklab run --report', so its report
	// draws the mechanism.
	if r, err := Run(cur, cur.Seed, Options{Factory: opt.Factory, Bubble: opt.Bubble, Prepare: opt.Prepare, KeepTrace: true}); err == nil {
		curRes = r
	}
	cur.Expect = Expect{}
	switch prop {
	case "mutual_exclusion":
		cur.Expect.MutualExclusion = checker.Violated
	case "resource":
		cur.Expect.Resource = checker.Violated
	case "liveness":
		cur.Expect.Liveness = checker.Violated
	}
	cur.Title = fmt.Sprintf("Counterexample for %s: %s violated (shrunk by locklab explore)", cur.Algorithm, strings.ReplaceAll(prop, "_", " "))
	cur.Course = nil // a counterexample is no lesson
	cur.Narrative = Narrative{
		What: fmt.Sprintf("A minimal schedule found by random exploration and shrinking: %s. Run it to see the witness.", describeSchedule(cur.Faults)),
		Why:  "Found by locklab explore; read the witness and the timeline (--report) to see which assumption the faults break.",
		Fix:  "Compare with the catalogue scenario that shows the same failure ('locklab list').",
	}
	return cur, curRes, runs
}

func describeSchedule(s faults.Schedule) string {
	if len(s) == 0 {
		return "no faults at all"
	}
	var parts []string
	for _, f := range s {
		parts = append(parts, f.String())
	}
	return strings.Join(parts, "; ")
}

// shrinkCandidates lists simpler neighbours of sc, simplest first: every
// simplification with the current seed, then the workload simplifications
// again under a few derived seeds. Changing the workload (fewer clients,
// starting together) changes which random latencies each message draws,
// which may undo the interleaving the violation needs; another seed often
// finds one that keeps it.
func shrinkCandidates(sc *Scenario) []*Scenario {
	var same, workload []*Scenario
	add := func(list *[]*Scenario, c *Scenario) {
		if c.Validate() == nil {
			*list = append(*list, c)
		}
	}
	for _, s := range faults.ShrinkCandidates(sc.Faults) {
		c := sc.Clone()
		c.Faults = s
		add(&same, c)
	}
	for drop := sc.Clients.Count; drop >= 1 && sc.Clients.Count > 1; drop-- {
		if c, ok := withoutClient(sc, drop); ok {
			add(&workload, c)
		}
	}
	if sc.Clients.Start.Max > 0 {
		c := sc.Clone()
		c.Clients.Start = Range{set: true}
		add(&workload, c)
	}
	if sc.Clients.Cycles > 1 {
		c := sc.Clone()
		c.Clients.Cycles--
		add(&workload, c)
	}
	if w := sc.Clients.Work; w.Max > w.Min {
		// A constant is simpler to read than a range: the longest work,
		// which keeps every window the violation may need open, or the
		// lower half of the range.
		for _, r := range []Range{{Min: w.Max, Max: w.Max, set: true}, {Min: w.Min, Max: w.Min + (w.Max-w.Min)/2, set: true}} {
			c := sc.Clone()
			c.Clients.Work = r
			add(&workload, c)
		}
	}
	out := append(same, workload...)
	reseed := func(list []*Scenario, n uint64) {
		for k := uint64(1); k <= n; k++ {
			for _, c := range list {
				d := c.Clone()
				d.Seed = c.Seed*0x9e3779b97f4a7c15 + k
				out = append(out, d)
			}
		}
	}
	reseed(workload, 48)
	reseed(same, 4)
	return out
}

// smallestWorkload is sc with two clients (the others dropped), starting
// together, working the longest time once, under n derived seeds.
func smallestWorkload(sc *Scenario, n uint64) []*Scenario {
	c := sc
	for c.Clients.Count > 2 {
		next, ok := withoutClient(c, c.Clients.Count)
		if !ok {
			return nil
		}
		c = next
	}
	c = c.Clone()
	c.Clients.Start = Range{set: true}
	c.Clients.Cycles = 1
	c.Clients.Work = Range{Min: c.Clients.Work.Max, Max: c.Clients.Work.Max, set: true}
	for i := range c.Faults {
		if c.Faults[i].After != nil {
			c.Faults[i].After.Nth = 0
		}
	}
	if c.Validate() != nil {
		return nil
	}
	var out []*Scenario
	for k := uint64(0); k < n; k++ {
		d := c.Clone()
		d.Seed = sc.Seed*0x9e3779b97f4a7c15 + 1000 + k
		out = append(out, d)
	}
	return out
}

// withoutClient removes client cN (1-based) and renames c(N+1).. down by
// one; it fails when a fault targets the removed client.
func withoutClient(sc *Scenario, n int) (*Scenario, bool) {
	removed := fmt.Sprintf("c%d", n)
	rename := func(name string) (string, bool) {
		if name == removed {
			return "", false
		}
		var k int
		if _, err := fmt.Sscanf(name, "c%d", &k); err == nil && k > n && fmt.Sprintf("c%d", k) == name {
			return fmt.Sprintf("c%d", k-1), true
		}
		return name, true
	}
	c := sc.Clone()
	c.Clients.Count--
	c.Clients.Each = nil
	withModeCycle(c, modesWithout(sc, n))
	for i := range c.Faults {
		f := &c.Faults[i]
		for _, p := range []*string{&f.Target, &f.Client} {
			if *p == "" {
				continue
			}
			v, ok := rename(*p)
			if !ok {
				return nil, false
			}
			*p = v
		}
		if f.After != nil && f.After.Client != "" {
			v, ok := rename(f.After.Client)
			if !ok {
				return nil, false
			}
			f.After.Client = v
		}
		for g := range f.Groups {
			var kept []string
			for _, h := range f.Groups[g] {
				if v, ok := rename(h); ok {
					kept = append(kept, v)
				}
			}
			if len(kept) == 0 {
				return nil, false
			}
			f.Groups[g] = kept
		}
	}
	return c, true
}
