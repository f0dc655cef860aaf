// Package matrix runs every algorithm against every fault class, many
// random schedules each, for 'locklab matrix' and its heatmap; its base
// scenarios (Base) are also where explore and locktest start. It is a
// room of its own (docs/architecture.md, "Rooms and what they may
// import") because it is a client of the runner: it builds scenarios and
// runs them, and neither the file format nor the runner depends on it.
package matrix

// The matrix: every algorithm against every fault class, many random
// schedules each. A cell counts how many runs broke mutual exclusion, the
// resource or liveness; its example is the first run that broke anything,
// kept as a seed and a schedule so it can be replayed as a scenario file.
//
// Every run is single-threaded and deterministic, and run i of a cell uses a
// schedule drawn from a generator seeded by (algorithm, class, i) and the
// world seed i, so a cell's counts depend on nothing but those three — not
// on the number of workers nor on the order in which runs finish.

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// The setup every matrix run shares: three clients, two lock cycles each,
// critical sections that are sometimes short and sometimes most of the TTL.
const (
	TTL      = 2 * time.Second
	Duration = 20 * time.Second
	// Horizon bounds the times of drawn faults: without faults the
	// clients are done after about five seconds, so later faults would act
	// on an idle system.
	Horizon = 6 * time.Second
	// DefaultSeeds is the number of runs per cell when none is given.
	DefaultSeeds = 20
	// WaitDelay and WaitJitter are how long a matrix or
	// explore waiter that found the lock held waits before it tries again
	// (an eighth and a sixteenth of the TTL, instead of the default
	// 100ms + 50ms): the lock is held most of a run, and waiters polling
	// it sent most of a run's commands (issue 24; BENCHMARKS.md, "Fewer
	// wasted commands").
	WaitDelay  = TTL / 8
	WaitJitter = TTL / 16
)

// Options says what to run.
type Options struct {
	// Seeds is the number of runs per cell (default DefaultSeeds).
	// Run i (1..Seeds) uses world seed i.
	Seeds int
	// Classes are the fault classes, one column each (default: all, in
	// faults.Classes order).
	Classes []faults.Class
	// Algorithms are the rows (default: every registered algorithm).
	Algorithms []string
	// Workers is the number of runs in flight (default runtime.NumCPU()).
	// It changes how long the matrix takes, never its result.
	Workers int
	// Progress, if set, is called after each run with the number of runs
	// done and the total; calls are serialised.
	Progress func(done, total int)
	// Context, when cancelled (Ctrl-C), stops handing out runs; the runs
	// in flight finish and the result covers the runs done
	// (Result.Interrupted).
	Context context.Context
}

// Counts counts runs per property.
type Counts struct {
	MutualExclusion int `json:"mutual_exclusion"`
	Resource        int `json:"resource"`
	Liveness        int `json:"liveness"`
}

func (c *Counts) add(v checker.Verdict, st checker.Status) {
	if v.MutualExclusion == st {
		c.MutualExclusion++
	}
	if v.Resource == st {
		c.Resource++
	}
	if v.Liveness == st {
		c.Liveness++
	}
}

// Shares are fractions of a cell's checked runs, per property.
type Shares struct {
	MutualExclusion float64 `json:"mutual_exclusion"`
	Resource        float64 `json:"resource"`
	Liveness        float64 `json:"liveness"`
}

// Example is a run worth looking at: its world seed, the schedule it ran and
// the verdict it got.
type Example struct {
	Seed     uint64          `json:"seed"`
	Schedule faults.Schedule `json:"schedule"`
	Verdict  checker.Verdict `json:"verdict"`
}

// Cell is one algorithm under one fault class.
type Cell struct {
	Algorithm string       `json:"algorithm"`
	Class     faults.Class `json:"class"`
	// Applicable is false when the class has nothing to act on for this
	// algorithm (no Redis node to restart under ZooKeeper); such a cell has
	// no runs.
	Applicable bool `json:"applicable"`
	// Runs is the number of runs; Errors of them failed to run at all and
	// are left out of every count and share.
	Runs   int `json:"runs"`
	Errors int `json:"errors"`
	// FirstError is the message of the first run that failed, if any.
	FirstError string `json:"first_error,omitempty"`
	// Violated and Unknown count runs by property.
	Violated Counts `json:"violated"`
	Unknown  Counts `json:"unknown"`
	// Example is the first run (lowest seed) that violated any property.
	Example *Example `json:"example,omitempty"`

	base *scenarios.Scenario
}

// Checked is the number of runs that produced a verdict.
func (c *Cell) Checked() int { return c.Runs - c.Errors }

// Shares returns the violated counts as fractions of the checked runs.
func (c *Cell) Shares() Shares {
	n := float64(c.Checked())
	if n == 0 {
		return Shares{}
	}
	return Shares{
		MutualExclusion: float64(c.Violated.MutualExclusion) / n,
		Resource:        float64(c.Violated.Resource) / n,
		Liveness:        float64(c.Violated.Liveness) / n,
	}
}

// ExampleScenario turns the cell's example into a scenario that 'locklab
// run' replays: the matrix setup, the example's faults and seed, and an
// expectation of exactly the violations the example showed. It returns nil
// when the cell has no example.
func (c *Cell) ExampleScenario() *scenarios.Scenario {
	if c.Example == nil {
		return nil
	}
	var sc *scenarios.Scenario
	if c.base != nil {
		sc = c.base.Clone()
	} else {
		var err error
		if sc, err = Base(c.Algorithm); err != nil {
			return nil
		}
	}
	ex := c.Example
	sc.ID = fmt.Sprintf("matrix-%s-%s-%d", c.Algorithm, c.Class, ex.Seed)
	sc.Title = fmt.Sprintf("%s under random %s faults (locklab matrix, seed %d)", c.Algorithm, c.Class, ex.Seed)
	sc.Seed = ex.Seed
	sc.Faults = ex.Schedule.Clone()
	var broke []string
	if ex.Verdict.MutualExclusion == checker.Violated {
		sc.Expect.MutualExclusion = checker.Violated
		broke = append(broke, "mutual exclusion")
	}
	if ex.Verdict.Resource == checker.Violated {
		sc.Expect.Resource = checker.Violated
		broke = append(broke, "the resource")
	}
	if ex.Verdict.Liveness == checker.Violated {
		sc.Expect.Liveness = checker.Violated
		broke = append(broke, "liveness")
	}
	var fs []string
	for _, f := range ex.Schedule {
		fs = append(fs, f.String())
	}
	sc.Narrative.What = fmt.Sprintf("Drawn by locklab matrix: %s, with %d clients and a %v TTL, under %s; this run broke %s.",
		c.Algorithm, sc.Clients.Count, sc.TTL, strings.Join(fs, "; "), strings.Join(broke, " and "))
	return sc
}

// Result is the outcome of Run.
type Result struct {
	Seeds      int            `json:"seeds"`
	Classes    []faults.Class `json:"classes"`
	Algorithms []string       `json:"algorithms"`
	// Setups describe the base scenario of each algorithm, in row order.
	Setups []Setup `json:"setups"`
	// Cells are ordered by algorithm (row), then class (column).
	Cells []Cell `json:"cells"`
	// Interrupted is set when the context was cancelled before every run
	// was done; each cell's Runs then counts the runs it did.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Setup is what a row's runs share.
type Setup struct {
	Algorithm string   `json:"algorithm"`
	Backend   string   `json:"backend"`
	Nodes     []string `json:"nodes"`
	// Fencing is the resource's fencing rule: ">" for algorithms whose
	// leases carry fencing tokens, "none" otherwise.
	Fencing  string             `json:"fencing"`
	TTL      scenarios.Duration `json:"ttl"`
	Clients  int                `json:"clients"`
	Cycles   int                `json:"cycles"`
	Work     scenarios.Range    `json:"work"`
	Duration scenarios.Duration `json:"duration"`
	Horizon  scenarios.Duration `json:"horizon"`
}

// Cell returns the cell of an algorithm and a class, or nil.
func (r *Result) Cell(algorithm string, class faults.Class) *Cell {
	for i := range r.Cells {
		if r.Cells[i].Algorithm == algorithm && r.Cells[i].Class == class {
			return &r.Cells[i]
		}
	}
	return nil
}

// matrixRNG is the generator of run i of a cell.
func matrixRNG(algorithm string, class faults.Class, i int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(algorithm))
	h.Write([]byte{0})
	h.Write([]byte(class))
	return rand.New(rand.NewPCG(h.Sum64(), uint64(i)))
}

// Schedule is the schedule of run i (1-based) of a cell: the same
// value Run draws, for tools that want to rerun one run.
func Schedule(base *scenarios.Scenario, class faults.Class, i int) faults.Schedule {
	return faults.Generate(matrixRNG(base.Algorithm, class, i), []faults.Class{class}, GeneratorNames(base), Horizon, base.TTL.D())
}

// safeRun runs sc and turns a panic on the caller's goroutine into an
// error, so one broken run cannot take the matrix down.
func safeRun(sc *scenarios.Scenario, seed uint64) (res *runner.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return runner.Run(sc, seed, runner.Options{Direct: true})
}

type matrixOutcome struct {
	schedule faults.Schedule
	verdict  checker.Verdict
	err      error
}

// Run runs every algorithm against every class, Seeds runs per cell.
// Bad options (an unknown algorithm or class, a negative count) are
// errors; a run that fails is counted in its cell's Errors.
func Run(opt Options) (*Result, error) {
	defer runner.BeginSweep()()
	if err := opt.withDefaults(); err != nil {
		return nil, err
	}
	classes, algs := opt.Classes, opt.Algorithms
	res := &Result{Seeds: opt.Seeds, Classes: slices.Clone(classes), Algorithms: slices.Clone(algs)}
	bases, baseErrs, err := matrixBases(res, algs)
	if err != nil {
		return nil, err
	}

	// Jobs are not materialised: job j of the applicable cells, in (cell,
	// index) order, is found from a running count, and outcomes are folded
	// into their cell as they arrive. Memory does not grow with Seeds.
	type span struct{ cell, first int } // the cell's first job number
	var spans []span
	total := 0
	for ai, a := range algs {
		names := GeneratorNames(bases[ai])
		for _, c := range classes {
			cell := Cell{Algorithm: a, Class: c, Applicable: faults.Applicable(c, names), base: bases[ai]}
			if cell.Applicable {
				spans = append(spans, span{cell: len(res.Cells), first: total})
				total += opt.Seeds
			}
			res.Cells = append(res.Cells, cell)
		}
	}
	rowOf := func(cell int) int { return cell / len(classes) }
	jobAt := func(j int) (cell, index int) {
		k, _ := slices.BinarySearchFunc(spans, j, func(s span, j int) int { return s.first - j })
		if k == len(spans) || spans[k].first > j {
			k--
		}
		return spans[k].cell, j - spans[k].first + 1
	}
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}

	var (
		mu   sync.Mutex
		next int
		done int
		wg   sync.WaitGroup
		fold = matrixFold{res: res, firstErrAt: map[int]int{}, exampleAt: map[int]int{}}
	)
	run := func(cell, index int) matrixOutcome {
		ai := rowOf(cell)
		return matrixRun(bases[ai], baseErrs[ai], res.Cells[cell].Class, index)
	}
	for range min(opt.Workers, max(total, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				j := next
				next++
				mu.Unlock()
				if j >= total || ctx.Err() != nil {
					return
				}
				cell, index := jobAt(j)
				o := run(cell, index)
				mu.Lock()
				fold.add(cell, index, o)
				done++
				if opt.Progress != nil {
					opt.Progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Interrupted = done < total
	return res, nil
}

// matrixFold folds run outcomes into their cells as they arrive. It keeps
// the lowest index of a cell's first error and first violation, so the
// result does not depend on which worker finished first.
type matrixFold struct {
	res                   *Result
	firstErrAt, exampleAt map[int]int
}

func (f matrixFold) add(cell, index int, o matrixOutcome) {
	c := &f.res.Cells[cell]
	c.Runs++
	if o.err != nil {
		c.Errors++
		if at, ok := f.firstErrAt[cell]; !ok || index < at {
			f.firstErrAt[cell] = index
			c.FirstError = fmt.Sprintf("seed %d: %v", index, o.err)
		}
		return
	}
	c.Violated.add(o.verdict, checker.Violated)
	c.Unknown.add(o.verdict, checker.Unknown)
	v := o.verdict
	if v.MutualExclusion == checker.Violated || v.Resource == checker.Violated || v.Liveness == checker.Violated {
		if at, ok := f.exampleAt[cell]; !ok || index < at {
			f.exampleAt[cell] = index
			c.Example = &Example{Seed: uint64(index), Schedule: o.schedule, Verdict: v}
		}
	}
}
