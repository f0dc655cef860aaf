package runner

import (
	"runtime/debug"
	"testing"
)

// collectorSetting reads GOGC and the memory limit without changing them.
func collectorSetting() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// A sweep runs under its own collector setting and gives the previous one
// back when the last overlapping sweep ends.
func TestSweepSetsAndRestoresCollector(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))

	end := BeginSweep()
	if p, l := collectorSetting(); p != sweepGCPercent || l != sweepMemoryLimit {
		t.Fatalf("during a sweep: GOGC %d, memory limit %d; expected %d and %d", p, l, sweepGCPercent, sweepMemoryLimit)
	}
	inner := BeginSweep() // Explore shrinking inside its own sweep
	inner()
	inner() // a second call does nothing
	if p, l := collectorSetting(); p != sweepGCPercent || l != sweepMemoryLimit {
		t.Fatalf("after a nested sweep ended: GOGC %d, memory limit %d; expected the sweep's %d and %d until the outer one ends", p, l, sweepGCPercent, sweepMemoryLimit)
	}
	end()
	if p, l := collectorSetting(); p != 100 || l != 1<<40 {
		t.Fatalf("after the sweep: GOGC %d, memory limit %d; expected the previous 100 and %d", p, l, int64(1<<40))
	}
}

// The user's GOGC and GOMEMLIMIT, and a lower limit the program set, win.
func TestSweepKeepsTheUsersCollector(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(100 << 20))

	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "")
	end := BeginSweep()
	if p, l := collectorSetting(); p != 150 || l != 100<<20 {
		t.Fatalf("GOGC=150 in the environment and a 100 MiB limit: during a sweep GOGC %d, limit %d; expected both kept", p, l)
	}
	end()

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "100MiB")
	debug.SetMemoryLimit(1 << 40)
	end = BeginSweep()
	if p, l := collectorSetting(); p != sweepGCPercent || l != 1<<40 {
		t.Fatalf("GOMEMLIMIT in the environment: during a sweep GOGC %d, limit %d; expected GOGC %d and the limit kept", p, l, sweepGCPercent)
	}
	end()
	if p, _ := collectorSetting(); p != 150 {
		t.Fatalf("after the sweep GOGC %d, expected 150 restored", p)
	}

	// The collector turned off stays off.
	t.Setenv("GOMEMLIMIT", "")
	debug.SetGCPercent(-1)
	end = BeginSweep()
	if p, _ := collectorSetting(); p != -1 {
		t.Fatalf("collector off: during a sweep GOGC %d, expected it left off", p)
	}
	end()
	debug.SetGCPercent(150)
}
