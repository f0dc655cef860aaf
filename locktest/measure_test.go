package locktest

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMeasureFirstViolation measures, per primitive and classic failure,
// the index of the first violating run over seeds 1..20, which is what
// the default number of runs per class (defaultRuns) must cover. It runs
// only when asked (it explores up to 1000 runs per seed and case):
//
//	LOCKLAB_MEASURE_RUNS=1 go test -count=1 -run TestMeasureFirstViolation -v ./locktest
//
// (LOCKLAB_MEASURE_CASE=semaphore runs the cases whose name contains it.)
//
// The figures are in BENCHMARKS.md ("locktest: runs per class").
func TestMeasureFirstViolation(t *testing.T) {
	if os.Getenv("LOCKLAB_MEASURE_RUNS") != "1" {
		t.Skip("set LOCKLAB_MEASURE_RUNS=1 to measure")
	}
	const seeds, limit = 20, 1000
	rw := func(clients []*redis.Client) RWLock { return &hashRWLock{c: clients[0]} }
	cases := []struct {
		name  string
		class Class
		run   func(t *testing.T, opt Options)
	}{
		{"mutex, plain-DEL release", Stall, func(t *testing.T, opt Options) { Run(t, setNXLock(true), opt) }},
		{"mutex, compare-and-delete, holder paused", Pause, func(t *testing.T, opt Options) { Run(t, setNXLock(false), opt) }},
		{"mutex, compare-and-delete, node restart", Restart, func(t *testing.T, opt Options) { Run(t, setNXLock(false), opt) }},
		{"mutex, compare-and-delete, clock jump", Clock, func(t *testing.T, opt Options) { Run(t, setNXLock(false), opt) }},
		{"semaphore of 2 permits, node restart", Restart, func(t *testing.T, opt Options) { RunSemaphore(t, slotSemaphore(2), 2, opt) }},
		{"semaphore of 2 permits, holder paused", Pause, func(t *testing.T, opt Options) { RunSemaphore(t, slotSemaphore(2), 2, opt) }},
		{"reader-writer lock, holder paused", Pause, func(t *testing.T, opt Options) { RunReadWrite(t, rw, opt) }},
		{"reader-writer lock, node restart", Restart, func(t *testing.T, opt Options) { RunReadWrite(t, rw, opt) }},
		{"zk.NewLock, holder paused", Pause, func(t *testing.T, opt Options) { RunZooKeeper(t, zkNewLock, opt) }},
	}
	got := observeFindings(t)
	var lines []string
	only := os.Getenv("LOCKLAB_MEASURE_CASE") // a substring of the cases to run
	for _, c := range cases {
		if !strings.Contains(c.name, only) {
			continue
		}
		var firsts []int
		var bySeed []string
		missed := 0
		for s := uint64(1); s <= seeds; s++ {
			t.Chdir(t.TempDir()) // no failfile of the last seed replayed
			opt := Options{TTL: 2 * time.Second, Classes: []Class{c.class}, Expect: Expect{c.class: Any}, Runs: limit, Seed: s, ShrinkRuns: 1}
			if c.class == Pause && strings.HasPrefix(c.name, "zk") {
				opt.TTL = 4 * time.Second
			}
			c.run(t, opt)
			if f := got[c.class]; f.run > 0 {
				firsts = append(firsts, f.run)
				bySeed = append(bySeed, fmt.Sprintf("%d:%d", s, f.run))
			} else {
				missed++
			}
		}
		slices.Sort(firsts)
		line := fmt.Sprintf("| %s | %s | %v | %d | %d | %d |", c.name, c.class, firsts, pct(firsts, 50), pct(firsts, 100), missed)
		lines = append(lines, line)
		t.Logf("%s\n  seed:first run %s", line, strings.Join(bySeed, " "))
	}
	t.Log("\n| lock | class | first violating run per seed (1..20, sorted) | median | max | seeds without one in 1000 |\n| --- | --- | --- | --- | --- | --- |\n" + strings.Join(lines, "\n"))
}

func pct(sorted []int, p int) int {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, (len(sorted)-1)*p/100)]
}
