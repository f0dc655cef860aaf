package runner

import (
	"os"
	"runtime/debug"
	"sync"
)

// The collector's setting while a sweep runs (issue 24). A sweep —
// explore, shrink, matrix, locktest's classes — runs thousands of short
// runs back to back; each allocates about 4.8 MB (the yardstick: Redlock,
// 5 nodes, 5 clients) and drops all of it when it ends, so the live heap
// stays at a few megabytes and, at Go's default GOGC=100, the collector
// starts a cycle every few megabytes allocated: about a fifth of a
// sweep's CPU went to it. A sweep raises GOGC to sweepGCPercent while it
// runs, so a cycle starts only when the heap has grown to five times what
// survived the last one, and restores the previous setting when the last
// sweep in the process ends.
//
// A higher GOGC alone would let a large run (a scenario at the default
// limits, whose peak was measured at 546 MB with GOGC=100, BENCHMARKS
// "Worst-case sweep with the work budget") grow its heap five times past
// what it keeps alive instead of two, past the 1 GB the default limits
// promise (issue 15). So the sweep also sets a soft memory limit,
// sweepMemoryLimit: when the runtime's memory nears it the collector runs
// as often as it must to stay under it, whatever GOGC says. A run whose
// live heap is under sweepMemoryLimit/5 (about 150 MiB: every sweep of
// the matrix's and explore's setups, a few MB live) collects less often
// than at the default; one with more collects as the limit requires; the
// limit is soft, so a run that needs more memory than the limit still
// runs (the runtime caps the collector's share of the CPU), as it would
// have without the setting.
//
// The setting is the process's (the collector is), so it is counted:
// sweeps that overlap (explore's workers run in one sweep; tests run
// sweeps in parallel; Explore shrinks inside its own sweep) share one
// setting, taken by the first and given back by the last. A user's own
// choice wins: with GOGC or GOMEMLIMIT in the environment, that knob is
// left alone, and a limit already set lower by the program is kept.
// The collector changes when memory is freed, never what a run computes:
// a run's events, digest and verdict do not depend on it.
const (
	// sweepGCPercent is GOGC during a sweep. Measured on the yardstick
	// (CPU time of 400 runs, one core, BENCHMARKS "third pass"): 100 →
	// 4.1 s, 200 → 3.8 s, 400 → 3.6 s, 800 → 3.5 s, with peak RSS 31,
	// 33, 42 and 59 MB: 400 takes most of the gain for 11 MB.
	sweepGCPercent = 400
	// sweepMemoryLimit is the soft limit on the runtime's memory during
	// a sweep: under the 1 GB the default limits promise, with room for
	// what the runtime does not count (the binary, thread stacks).
	sweepMemoryLimit = 768 << 20
)

var sweepGC struct {
	sync.Mutex
	depth          int
	percent, limit int64 // the settings to restore
	setPercent     bool
	setLimit       bool
}

// BeginSweep gives the process the sweep's collector setting until the
// returned function is called (usually deferred; calling it again does
// nothing). explore.Explore, explore.Shrink and matrix.Run call it; a
// caller that runs its own loop of runs (package locktest's drawn
// classes) calls it too.
func BeginSweep() (end func()) {
	s := &sweepGC
	s.Lock()
	defer s.Unlock()
	if s.depth == 0 {
		s.setPercent, s.setLimit = false, false
		if os.Getenv("GOGC") == "" {
			s.percent = int64(debug.SetGCPercent(sweepGCPercent))
			s.setPercent = true
			if s.percent < 0 {
				// The program turned the collector off: keep it off.
				debug.SetGCPercent(int(s.percent))
				s.setPercent = false
			}
		}
		if os.Getenv("GOMEMLIMIT") == "" {
			if cur := debug.SetMemoryLimit(-1); cur > sweepMemoryLimit {
				s.limit = debug.SetMemoryLimit(sweepMemoryLimit)
				s.setLimit = true
			}
		}
	}
	s.depth++
	var once sync.Once
	return func() { once.Do(endSweep) }
}

func endSweep() {
	s := &sweepGC
	s.Lock()
	defer s.Unlock()
	s.depth--
	if s.depth > 0 {
		return
	}
	if s.setPercent {
		debug.SetGCPercent(int(s.percent))
	}
	if s.setLimit {
		debug.SetMemoryLimit(s.limit)
	}
}
