package locktest

import "runtime/debug"

// explorationGCPercent is the garbage collector's target while a class
// explores, in place of Go's default of 100. A run of a real client
// library allocates much and keeps little: go-zookeeper makes a 1.5 MiB
// read buffer per connection, go-redis a writer and reader per dial, and
// each run builds a world of its own. At the default target, collection
// (mostly assists charged to those allocations) was a quarter to half of
// a run's CPU; at 400 a run costs 15–35% less CPU (docs/performance.md,
// BENCHMARKS.md "The bubble path at exploration speed") for a heap up to
// five times the few MiB a run keeps live. The collector's target decides
// nothing a run does: digests and verdicts are the same at any target.
const explorationGCPercent = 400

// exploreGC raises the collector's target for the class's runs and
// returns what restores it. A target the user chose is kept: GOGC=off,
// or one already higher; GOMEMLIMIT bounds the heap whatever the target.
func exploreGC() (restore func()) {
	prev := debug.SetGCPercent(explorationGCPercent)
	if prev < 0 || prev > explorationGCPercent {
		debug.SetGCPercent(prev)
	}
	return func() { debug.SetGCPercent(prev) }
}
