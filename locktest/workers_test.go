package locktest

import (
	"fmt"
	"testing"
	"time"
)

// redsync's 5-pool Redlock explored in one process and in three worker
// processes (Options.Workers) comes to the same counterexample: the same
// violated property, the same shrunk schedule and the same trace digest of
// its replay. The workers are copies of this test binary, each running a
// shard of the runs; the runs they did add up to the sweep's.
func TestWorkersSameCounterexampleRedsync(t *testing.T) {
	got := observeFindings(t)
	var first finding
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			Run(t, redlock, Options{TTL: 8 * time.Second, Nodes: 5, Classes: []Class{Clock}, Runs: 30, ShrinkRuns: 40, Workers: workers, Expect: Expect{Clock: Any}})
		})
		if *flagShard != "" {
			continue // a worker process: it explores its shard of one subtest
		}
		f := got[Clock]
		if f.prop == Safe || f.res == nil || f.sc == nil {
			t.Fatalf("workers=%d: no counterexample in %d runs (redsync's 5-pool Redlock breaks under clock jumps)", workers, f.runs)
		}
		if workers == 1 {
			first = f
			if n := workersStarted.Load(); n != 0 {
				t.Fatalf("workers=1 started %d worker processes", n)
			}
			continue
		}
		if n := workersStarted.Load(); n != int64(workers) {
			t.Fatalf("workers=%d started %d worker processes", workers, n)
		}
		if f.prop != first.prop || f.res.TraceSHA256 != first.res.TraceSHA256 || f.sc.Seed != first.sc.Seed || describeSchedule(f) != describeSchedule(first) {
			t.Fatalf("workers=%d: %s, schedule %s, digest %s; one process: %s, schedule %s, digest %s",
				workers, f.prop, describeSchedule(f), f.res.TraceSHA256, first.prop, describeSchedule(first), first.res.TraceSHA256)
		}
		t.Logf("workers=%d: %s in %d runs (one process: %d), schedule %s", workers, f.prop, f.runs, first.runs, describeSchedule(f))
	}
}

func describeSchedule(f finding) string {
	s := ""
	for _, fl := range f.sc.Faults {
		s += fl.String() + "; "
	}
	return fmt.Sprintf("%s%d client(s)", s, f.sc.Clients.Count)
}
