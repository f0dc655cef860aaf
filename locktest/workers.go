package locktest

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/runner"
)

// Exploration in worker processes (Options.Workers). The parent test
// starts each worker as its own test binary with -test.run naming exactly
// the class's subtest, and -locktest.shard I/N: the worker runs that
// class's exploration restricted to runs I, I+N, I+2N … without shrinking,
// writes how many runs it did and its lowest violating run to the file
// -locktest.shardout names, and passes. The parent takes the lowest run
// over all shards, rebuilds it (explore.Draw) and shrinks it in its
// own bubble, exactly as a single process shrinks its first violating run.

var (
	flagWorkers  = flag.Int("locktest.workers", 0, "locktest: explore each class in this many worker processes (0: Options.Workers)")
	flagShard    = flag.String("locktest.shard", "", "locktest (internal): run only shard I/N of the exploration, in a worker process")
	flagShardOut = flag.String("locktest.shardout", "", "locktest (internal): where a worker writes its shard's outcome")
)

// workersStarted counts the worker processes started (for tests).
var workersStarted atomic.Int64

// shardOutcome is what a worker reports.
type shardOutcome struct {
	Runs  int `json:"runs"`
	First int `json:"first"` // lowest violating run index, 0 when none
}

// workers is the number of worker processes a class explores in (1: this
// process).
func (o *Options) workers() int {
	if *flagShard != "" {
		return 1 // a worker does not start workers
	}
	if *flagWorkers > 0 {
		return *flagWorkers
	}
	return max(o.Workers, 1)
}

// shardFlag parses -locktest.shard; ok is false when this process is not a
// worker.
func shardFlag() (shard, shards int, ok bool, err error) {
	if *flagShard == "" {
		return 0, 0, false, nil
	}
	if _, err := fmt.Sscanf(*flagShard, "%d/%d", &shard, &shards); err != nil || shards < 1 || shard < 1 || shard > shards {
		return 0, 0, false, fmt.Errorf("-locktest.shard %q: expected I/N with 1 <= I <= N", *flagShard)
	}
	return shard, shards, true, nil
}

// writeShard is a worker's report of its exploration.
func writeShard(ex *explore.Result) error {
	out := shardOutcome{Runs: ex.Runs}
	if len(ex.Findings) > 0 {
		out.First = ex.Findings[0].Run
	}
	data, _ := json.Marshal(out)
	return os.WriteFile(*flagShardOut, data, 0o644)
}

// exploreInWorkers runs the class's exploration in n worker processes and
// returns the runs they did and the lowest violating run (0: none). t is
// the class's subtest.
func exploreInWorkers(t *testing.T, n int) (runs, first int, err error) {
	workersStarted.Add(int64(n))
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	dir := t.TempDir()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	outs := make([]shardOutcome, n)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			file := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
			args := []string{"-test.run=" + strings.Join(parts, "/"), "-test.count=1", "-test.timeout=0",
				fmt.Sprintf("-locktest.shard=%d/%d", i, n), "-locktest.shardout=" + file}
			if *flagSeed != 0 {
				args = append(args, fmt.Sprintf("-locktest.seed=%d", *flagSeed))
			}
			if *flagRuns > 0 {
				args = append(args, fmt.Sprintf("-locktest.runs=%d", *flagRuns))
			}
			cmd := exec.Command(os.Args[0], args...)
			output, runErr := cmd.CombinedOutput()
			data, readErr := os.ReadFile(file)
			if runErr == nil && readErr == nil {
				runErr = json.Unmarshal(data, &outs[i-1])
			} else if runErr == nil {
				runErr = fmt.Errorf("no outcome: %v", readErr)
			}
			if runErr != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("worker %d/%d: %v\n%s", i, n, runErr, output))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return 0, 0, fmt.Errorf("locktest: exploring in %d worker processes failed:\n%s", n, strings.Join(errs, "\n"))
	}
	for _, o := range outs {
		runs += o.Runs
		if o.First != 0 && (first == 0 || o.First < first) {
			first = o.First
		}
	}
	return runs, first, nil
}

// shrinkRun rebuilds run i of the exploration and shrinks it, as Explore
// does with its first violating run: the result is the single process's.
func shrinkRun(opt explore.Options, runs, i int) (*explore.Result, error) {
	ex := &explore.Result{Runs: runs}
	if i == 0 {
		return ex, nil
	}
	sc, err := explore.Draw(opt, i)
	if err != nil {
		return nil, err
	}
	res, err := runner.Run(sc, sc.Seed, runner.Options{Factory: opt.Factory, NoTrace: true, Bubble: true, Prepare: opt.Prepare})
	if err != nil {
		return nil, fmt.Errorf("run %d: %w", i, err)
	}
	prop := explore.HuntedProperty(res.Report.Verdict, opt.Hunt)
	if prop == "" {
		return nil, fmt.Errorf("run %d violated a property in its worker process and none here: the run does not replay", i)
	}
	f := explore.Finding{Run: i, Property: prop, Scenario: sc, Result: res}
	f.Minimal, f.MinimalResult, f.ShrinkRuns = explore.Shrink(sc, prop, explore.ShrinkOptions{Factory: opt.Factory, MaxRuns: opt.MaxShrinkRuns, Bubble: true, Prepare: opt.Prepare})
	ex.Findings = []explore.Finding{f}
	return ex, nil
}
