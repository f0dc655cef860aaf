package locktest

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
)

// classRun is one fault class's subtest: the lock, the options, the
// setup its runs start from and what the class is expected to do.
type classRun struct {
	t      *testing.T // the class's subtest, inside its bubble
	f      builder
	opt    Options
	base   *scenarios.Scenario
	class  Class
	expect Outcome
}

// runClass runs one class: a replay (-locktest.replay, Options.Replay),
// a worker's shard, or the saved counterexamples first and then the
// exploration.
func runClass(t *testing.T, f builder, opt Options, base *scenarios.Scenario, class Class) {
	t.Helper()
	if opt.Runs == 0 {
		opt.Runs = defaultRuns(class)
	}
	c := &classRun{f: f, opt: opt, base: base, class: class, expect: Safe}
	if e, ok := opt.Expect[class]; ok {
		c.expect = e
	}
	if class == Failover && opt.Replicas == 0 && opt.failover == nil {
		t.Skipf("locktest: %s: failover needs Options.Replicas", where(class, opt.caller))
	}
	shard, shards, worker, err := shardFlag()
	if err != nil {
		t.Fatal(err)
	}
	saved := savedFailfiles(t, class)
	drawn := class == Failover || class == Stall // drawn by locktest, not the generator
	// With workers, the sweep runs in worker processes before this
	// process's bubble opens (a process is no thing to wait for inside
	// one); saved failfiles that are replayed first keep it here.
	parallel, wRuns, wFirst := false, 0, 0
	if n := opt.workers(); n > 1 && !drawn && replayFile(opt) == "" && (len(saved) == 0 || *flagSeed != 0) {
		parallel = true
		if wRuns, wFirst, err = exploreInWorkers(t, n); err != nil {
			t.Fatal(err)
		}
	}
	defer exploreGC()()
	stop := make(chan struct{})
	defer close(stop)
	go watchdog(t.Name(), stop)
	defer func() {
		// A lock blocked for good on a channel of its own leaves goroutines
		// behind in the bubble; synctest then panics. The failure has
		// already been reported with what blocked; say it once more and
		// carry on with the next class instead of killing the test binary.
		if r := recover(); r != nil {
			t.Errorf("locktest: %s: goroutines of the lock outlived the runs (%v): stop them when the context passed to Lock is cancelled, or when Unlock is called. Still there:\n%s", where(class, opt.caller), r, sim.BlockedGoroutines(true))
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		c.t = t
		if file := replayFile(opt); file != "" {
			c.replay(file)
			return
		}
		exOpt := c.exploreOptions()
		if worker {
			if drawn {
				t.Skipf("locktest: %s is not split across workers", class)
			}
			exOpt.Shard, exOpt.Shards, exOpt.NoShrink = shard, shards, true
			ex, err := explore.Explore(exOpt)
			if err == nil {
				err = writeShard(ex)
			}
			if err != nil {
				t.Fatalf("locktest: %s, shard %d/%d: %v", class, shard, shards, err)
			}
			return
		}
		if c.replaySaved(saved) {
			return
		}
		c.explore(exOpt, drawn, parallel, wRuns, wFirst)
	})
}

func (c *classRun) prepare(seed uint64) { seedProcessRandom(c.t, seed) }

func (c *classRun) factory() algorithms.Factory {
	return c.f.algorithm(c.opt.TTL, c.opt.Renews, c.opt.Fencing)
}

// run runs one scenario of the class in the bubble.
func (c *classRun) run(sc *scenarios.Scenario, keep bool) (*runner.Result, error) {
	return runner.Run(sc, sc.Seed, runner.Options{Factory: c.factory(), Bubble: true, KeepTrace: keep, Prepare: c.prepare})
}

func (c *classRun) exploreOptions() explore.Options {
	return explore.Options{
		Algorithm:     algorithms.Custom,
		Factory:       c.factory(),
		Base:          c.base,
		Classes:       []faults.Class{c.class},
		Runs:          c.opt.Runs,
		Seed:          c.opt.Seed,
		Bubble:        true,
		KeepWorkload:  c.opt.keepWorkload(),
		MaxShrinkRuns: c.opt.ShrinkRuns,
		Prepare:       c.prepare,
		Persistence:   c.opt.Persistence,
		Hunt:          c.opt.Hunt.properties(c.class),
	}
}

// at heads every line the class logs.
func (c *classRun) at() string { return where(c.class, c.opt.caller) }

// replaySaved replays the class's saved counterexamples, oldest first, as
// rapid does, and reports true when one still breaks the lock (the class
// is then judged on it). An explicit -locktest.seed skips them: that
// seed's runs are what the user asked to see.
func (c *classRun) replaySaved(saved []string) bool {
	t := c.t
	if len(saved) == 0 {
		return false
	}
	if *flagSeed != 0 {
		which := "the saved counterexample " + saved[0] + " was not replayed (run without -locktest.seed to replay it)"
		if len(saved) > 1 {
			which = fmt.Sprintf("the %d saved counterexamples %s were not replayed (run without -locktest.seed to replay them)", len(saved), strings.Join(saved, ", "))
		}
		t.Logf("locktest: %s: exploring -locktest.seed=%d; %s", c.at(), *flagSeed, which)
		return false
	}
	for i, file := range saved {
		sc, err := scenarios.Load(file)
		if err != nil {
			t.Fatalf("locktest: %s: the saved counterexample %v", c.at(), err)
		}
		logWarnings(t, sc)
		if err := checkMadeFor(t, file, sc, c.base, c.class, c.opt.caller); err != nil {
			t.Fatal(err)
		}
		res, err := c.run(sc, true)
		if err != nil {
			t.Fatalf("locktest: %s: %s: %v", c.at(), file, err)
		}
		if explore.HuntedProperty(res.Report.Verdict, c.opt.Hunt.properties(c.class)) != "" {
			prop := violated(res.Report.Verdict)
			judge(t, c.class, c.expect, c.opt.caller, c.base, finding{prop: prop, sc: sc, res: res, file: file,
				what: fmt.Sprintf("the saved counterexample %s, replayed instead of exploring seed %d (%d of %d saved for this class; delete it, or pass -locktest.seed, to explore)", file, c.opt.Seed, i+1, len(saved))})
			return true
		}
		if prop := violated(res.Report.Verdict); prop != Safe {
			t.Logf("locktest: %s: replayed the saved counterexample %s: %s, which Options.Hunt leaves out", c.at(), file, prop.found())
			continue
		}
		t.Logf("locktest: %s: replayed the saved counterexample %s: it no longer breaks the lock", c.at(), file)
	}
	t.Logf("locktest: %s: none of the %d saved counterexample(s) breaks the lock; exploring seed %d", c.at(), len(saved), c.opt.Seed)
	return false
}

// explore runs the class's exploration and judges what it found; a
// counterexample is saved beside the class's earlier ones.
func (c *classRun) explore(exOpt explore.Options, drawn, parallel bool, wRuns, wFirst int) {
	t, opt := c.t, c.opt
	var (
		ex  *explore.Result
		err error
	)
	switch {
	case c.class == Failover:
		draw := failoverRun
		if opt.failover != nil {
			draw = opt.failover // a database's standby (database.go)
		}
		ex, err = exploreDrawn(draw, c.f, opt, c.base, c.prepare)
	case c.class == Stall:
		ex, err = exploreDrawn(stallRun, c.f, opt, c.base, c.prepare)
	case parallel:
		ex, err = shrinkRun(exOpt, wRuns, wFirst)
	default:
		ex, err = explore.Explore(exOpt)
	}
	if err != nil {
		t.Fatalf("locktest: %s: %v", c.at(), err)
	}
	if ex.Unhunted > 0 {
		hunted := strings.TrimSuffix((opt.Hunt[c.class] &^ AtMost &^ Any).String(), " violated")
		t.Logf("locktest: %s: %d run(s) broke only what Options.Hunt leaves out (it hunts %s), the first of them run %d; not judged", c.at(), ex.Unhunted, hunted, ex.UnhuntedFirst)
	}
	if len(ex.Findings) == 0 {
		c.refuseHiddenBreaks(ex)
		judge(t, c.class, c.expect, opt.caller, c.base, finding{runs: ex.Runs, seed: opt.Seed})
		return
	}
	fd := ex.Findings[0]
	sc := fd.Minimal
	if sc == nil {
		sc = fd.Scenario
	}
	sc.ID = fmt.Sprintf("locktest-%s-%s", strings.ReplaceAll(t.Name(), "/", "-"), c.class)
	sc.MadeFor = madeFor(t, c.class, sc)
	res, err := c.run(sc, true)
	if err != nil {
		t.Fatalf("locktest: %s: %v", c.at(), err)
	}
	what := fmt.Sprintf("run %d of %d (seed %d), shrunk to %d fault(s) and %d client(s)", fd.Run, opt.Runs, opt.Seed, len(sc.Faults), sc.Clients.Count)
	file, note := saveFailfile(t, c.class, sc)
	if note != "" {
		what += "; " + note
	}
	judge(t, c.class, c.expect, opt.caller, c.base, finding{prop: violated(res.Report.Verdict), sc: sc, res: res, file: file, what: what, runs: ex.Runs, seed: opt.Seed, run: fd.Run})
}

// replay runs a counterexample file instead of exploring
// (-locktest.replay, Options.Replay) and prints its witness, after
// checking that the file was made for this test, class and lock.
func (c *classRun) replay(file string) {
	t := c.t
	t.Helper()
	sc, err := scenarios.Load(file)
	if err != nil {
		t.Fatalf("%v: %v", errNoReplay, err)
	}
	logWarnings(t, sc)
	if err := checkMadeFor(t, file, sc, c.base, c.class, c.opt.caller); err != nil {
		t.Fatal(err)
	}
	res, err := c.run(sc, true)
	if err != nil {
		t.Fatalf("locktest: %s: %s: %v", c.at(), file, err)
	}
	judge(t, c.class, c.expect, c.opt.caller, c.base, finding{prop: violated(res.Report.Verdict), sc: sc, res: res, file: file, what: "replay of " + file, runs: 1, seed: sc.Seed})
	trace := strings.TrimSuffix(file, ".yaml") + ".trace.txt"
	var tb strings.Builder
	for _, e := range res.Trace {
		tb.WriteString(e.String())
		tb.WriteByte('\n')
	}
	if os.WriteFile(trace, []byte(tb.String()), 0o644) != nil {
		trace = "(not written)"
	}
	t.Logf("locktest: %s: replay of %s: verdict %+v, trace sha256 %s, %d lines in %s", c.at(), file, res.Report.Verdict, res.TraceSHA256, res.TraceLines, trace)
}

// refuseHiddenBreaks fails a class whose hunt found nothing while runs it
// passed over broke what the class is expected to keep: hunting chooses
// what to look for, and must not make a broken lock read as safe.
func (c *classRun) refuseHiddenBreaks(ex *explore.Result) {
	if ex.Unhunted == 0 || c.expect&Any != 0 || c.expect != Safe && c.expect&AtMost == 0 {
		return // nothing passed over, or the expectation asserts a violation anyway
	}
	var broke Outcome
	for _, p := range ex.UnhuntedProperties {
		broke |= map[string]Outcome{"mutual_exclusion": MutualExclusion, "resource": Resource, "liveness": Liveness}[p]
	}
	if extra := broke &^ c.expect; extra != Safe {
		c.t.Errorf("locktest: %s: no run broke what Options.Hunt looks for, but %d run(s) it passed over broke the lock (%s; the first is run %d of seed %d), and the class is expected %s: run without Hunt to see them", c.at(), ex.Unhunted, extra.found(), ex.UnhuntedFirst, c.opt.Seed, c.expect)
	}
}

// logWarnings logs what reading a saved file warned about (a key in its
// retired spelling, read as its new name; scenarios/retired.go), so the
// file's owner learns the new words without the test failing.
func logWarnings(t testing.TB, sc *scenarios.Scenario) {
	t.Helper()
	for _, w := range sc.Warnings {
		t.Logf("locktest: warning: %v", w)
	}
}
