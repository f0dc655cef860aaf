package explore

import (
	"runtime/debug"
	"testing"

	"github.com/locklab/locklab/runner"
)

// collectorSetting reads GOGC and the memory limit without changing them.
func collectorSetting() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// Explore itself runs under the sweep's collector setting (the one
// BeginSweep installs, pinned by scenarios' TestSweepSetsAndRestoresCollector)
// and restores the caller's afterwards.
func TestExploreRunsUnderSweepCollector(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	end := runner.BeginSweep()
	sweepPercent, sweepLimit := collectorSetting()
	end()
	if sweepPercent == 100 && sweepLimit == 1<<40 {
		t.Fatalf("a sweep keeps the caller's collector setting (GOGC %d, limit %d); the test cannot tell them apart", sweepPercent, sweepLimit)
	}
	seen := 0
	_, err := Explore(Options{Algorithm: "set-nx-px-lua", Runs: 2, Workers: 1, NoShrink: true, Progress: func(int, int) {
		if p, l := collectorSetting(); p == sweepPercent && l == sweepLimit {
			seen++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if seen != 2 {
		t.Fatalf("runs under the sweep's collector setting: %d of 2", seen)
	}
	if p, l := collectorSetting(); p != 100 || l != 1<<40 {
		t.Fatalf("after Explore: GOGC %d, limit %d; expected 100 and %d restored", p, l, int64(1<<40))
	}
}
