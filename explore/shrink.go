package explore

import (
	"context"
	"fmt"
	"strings"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// ShrinkOptions tunes Shrink.
type ShrinkOptions struct {
	Factory algorithms.Factory
	// MaxRuns bounds the number of candidate runs (default 2000).
	MaxRuns int
	// Context, when cancelled, ends shrinking with the smallest
	// counterexample so far.
	Context context.Context
	// Bubble runs inside the calling synctest bubble (runner.Options.Bubble).
	Bubble  bool
	Prepare func(seed uint64)
}

// Shrink looks for a simpler scenario that, run with the same seed, still
// violates prop: it repeatedly takes the first simpler neighbour that does
// (fewer faults, smaller faults, earlier faults, fewer clients, fewer
// cycles, shorter work) until none does. The result's expectation is set to
// exactly the violated property, so 'locklab run FILE' exits 0 when it
// reproduces the counterexample.
func Shrink(sc *scenarios.Scenario, prop string, opt ShrinkOptions) (*scenarios.Scenario, *runner.Result, int) {
	defer runner.BeginSweep()()
	maxRuns := opt.MaxRuns
	if maxRuns == 0 {
		maxRuns = 2000
	}
	runOpt := runner.Options{Factory: opt.Factory, NoTrace: true, Bubble: opt.Bubble, Prepare: opt.Prepare, Direct: true}
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	cur := sc.Clone()
	curRes, err := runner.Run(cur, cur.Seed, runOpt)
	if err != nil || !scenarios.Violates(curRes.Report.Verdict, prop) {
		return nil, nil, 1
	}
	runs := 1
	try := func(cands []*scenarios.Scenario) bool {
		for _, cand := range cands {
			if runs >= maxRuns || ctx.Err() != nil {
				return false
			}
			runs++
			res, err := runner.Run(cand, cand.Seed, runOpt)
			if err == nil && scenarios.Violates(res.Report.Verdict, prop) {
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
	if r, err := runner.Run(cur, cur.Seed, runner.Options{Factory: opt.Factory, Bubble: opt.Bubble, Prepare: opt.Prepare, KeepTrace: true}); err == nil {
		curRes = r
	}
	cur.Expect = scenarios.Expect{}
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
	cur.Narrative = scenarios.Narrative{
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
func shrinkCandidates(sc *scenarios.Scenario) []*scenarios.Scenario {
	var same, workload []*scenarios.Scenario
	add := func(list *[]*scenarios.Scenario, c *scenarios.Scenario) {
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
		c.Clients.Start = scenarios.ExplicitRange(0, 0)
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
		for _, r := range []scenarios.Range{scenarios.ExplicitRange(w.Max, w.Max), scenarios.ExplicitRange(w.Min, w.Min+(w.Max-w.Min)/2)} {
			c := sc.Clone()
			c.Clients.Work = r
			add(&workload, c)
		}
	}
	out := append(same, workload...)
	reseed := func(list []*scenarios.Scenario, n uint64) {
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
func smallestWorkload(sc *scenarios.Scenario, n uint64) []*scenarios.Scenario {
	c := sc
	for c.Clients.Count > 2 {
		next, ok := withoutClient(c, c.Clients.Count)
		if !ok {
			return nil
		}
		c = next
	}
	c = c.Clone()
	c.Clients.Start = scenarios.ExplicitRange(0, 0)
	c.Clients.Cycles = 1
	c.Clients.Work = scenarios.ExplicitRange(c.Clients.Work.Max, c.Clients.Work.Max)
	for i := range c.Faults {
		if c.Faults[i].After != nil {
			c.Faults[i].After.Nth = 0
		}
	}
	if c.Validate() != nil {
		return nil
	}
	var out []*scenarios.Scenario
	for k := uint64(0); k < n; k++ {
		d := c.Clone()
		d.Seed = sc.Seed*0x9e3779b97f4a7c15 + 1000 + k
		out = append(out, d)
	}
	return out
}

// withoutClient removes client cN (1-based) and renames c(N+1).. down by
// one; it fails when a fault targets the removed client.
func withoutClient(sc *scenarios.Scenario, n int) (*scenarios.Scenario, bool) {
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
	scenarios.WithModeCycle(c, scenarios.ModesWithout(sc, n))
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
