package locktest

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/faults"
)

// TestRedsyncSweepTimedAcrossWorkers times one sweep of redsync's 5-pool
// Redlock (the crash class, LOCKLAB_TIME_WORKERS runs) in one process and
// in two worker processes, and logs the wall and CPU time of each: the
// figures of BENCHMARKS.md's "Parallel bubbles and sharded sweeps". It
// runs only when asked (a test asserts no time), and asserts what
// determinism promises whatever the worker count: the same outcome after
// the same number of runs.
//
//	LOCKLAB_TIME_WORKERS=200 go test -count=1 -run TestRedsyncSweepTimedAcrossWorkers -v ./locktest
func TestRedsyncSweepTimedAcrossWorkers(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("LOCKLAB_TIME_WORKERS"))
	if runs <= 0 && *flagShard == "" {
		t.Skip("set LOCKLAB_TIME_WORKERS=N to time a sweep of N runs with 1 and 2 worker processes")
	}
	got := observeFindings(t)
	var first finding
	for _, workers := range []int{1, 2} {
		start, cpu := time.Now(), cpuTime()
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			Run(t, redlock, Options{TTL: 8 * time.Second, Nodes: 5, Classes: []Class{Crash}, Runs: runs, Workers: workers, Expect: Expect{Crash: Any}})
		})
		if *flagShard != "" {
			continue // a worker process: it ran its shard of one subtest
		}
		f := got[Crash]
		t.Logf("workers=%d: %s after %d runs in %.2f s of wall time, %.2f s of CPU (this process and its workers)",
			workers, f.prop, f.runs, time.Since(start).Seconds(), cpuTime()-cpu)
		if workers == 1 {
			first = f
		} else if f.prop != first.prop || f.runs != first.runs {
			t.Fatalf("workers=%d: %s after %d runs; one process: %s after %d", workers, f.prop, f.runs, first.prop, first.runs)
		}
	}
}

// cpuTime is the user and system CPU of this process and of its children
// that have been waited for, in seconds.
func cpuTime() float64 {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	s := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	return s(self.Utime) + s(self.Stime) + s(kids.Utime) + s(kids.Stime)
}

// TestRedsyncRunTimed times a whole Run of redsync's 5-pool Redlock with
// the default options (every class, default runs per class; each class
// expected Any, so that none fails) and logs each class's outcome and
// runs, and the wall and CPU time of the whole: the figures of
// BENCHMARKS.md's "The bubble path at exploration speed". It runs only
// when asked:
//
//	LOCKLAB_TIME_RUN=1 go test -count=1 -run TestRedsyncRunTimed -v ./locktest
func TestRedsyncRunTimed(t *testing.T) {
	if os.Getenv("LOCKLAB_TIME_RUN") != "1" {
		t.Skip("set LOCKLAB_TIME_RUN=1 to time a whole Run of redsync with the default options")
	}
	t.Chdir(t.TempDir()) // no failfile replayed or left behind
	got := observeFindings(t)
	expect := Expect{}
	for _, c := range append(faults.Classes(), Stall) {
		expect[c] = Any
	}
	start, cpu := time.Now(), cpuTime()
	Run(t, redlock, Options{TTL: 8 * time.Second, Nodes: 5, Expect: expect})
	wall, used := time.Since(start).Seconds(), cpuTime()-cpu
	total := 0
	for _, c := range append(faults.Classes(), Stall) {
		f := got[c]
		total += f.runs
		t.Logf("%s: %s after %d runs", c, f.prop.found(), f.runs)
	}
	t.Logf("whole Run: %d runs explored in %.2f s of wall time, %.2f s of CPU", total, wall, used)
}
