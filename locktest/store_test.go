package locktest

import (
	"testing"
	"time"
)

// The fault classes act on the lock's traffic, not on the harness's own
// store: a correct compare-and-delete lock passes drop and delay with
// the default options. Before, a drop or a delay of the worker's own
// WRITE to the store kept it waiting (timeout waiting for WRITE from
// store) and carried its hold past the TTL, and the correct lock failed
// both classes (issue 31, item 4). The plain-DEL lock is still flagged.
func TestDropAndDelaySpareTheStore(t *testing.T) {
	got := observeFindings(t)
	Run(t, setNXLock(false), Options{TTL: 2 * time.Second, Classes: []Class{Drop, Delay}})
	for _, c := range []Class{Drop, Delay} {
		if f := got[c]; f.prop != Safe || f.runs != defaultRuns(c) {
			t.Errorf("%s: compare-and-delete lock %s in %d runs, want safe in %d", c, f.prop.found(), f.runs, defaultRuns(c))
		}
	}
	Run(t, setNXLock(true), Options{TTL: 2 * time.Second, Classes: []Class{Delay, Stall}, Expect: Expect{Delay: Any, Stall: Any}})
	if got[Delay].prop&MutualExclusion == 0 && got[Stall].prop&MutualExclusion == 0 {
		t.Errorf("plain-DEL lock: delay %s, stall %s; want mutual exclusion violated", got[Delay].prop.found(), got[Stall].prop.found())
	}
}

// Options.FaultStore puts the store's traffic back under the faults: the
// same correct lock then fails drop, for the reason no lock can prevent.
func TestFaultStoreOption(t *testing.T) {
	got := observeFindings(t)
	Run(t, setNXLock(false), Options{TTL: 2 * time.Second, Classes: []Class{Drop}, Expect: Expect{Drop: Any}, FaultStore: true})
	f := got[Drop]
	if f.prop == Safe {
		t.Fatalf("drop with FaultStore: no violation in %d runs", f.runs)
	}
	// The same schedule with the store spared is safe: what broke was the
	// worker's own traffic.
	sc := f.sc.Clone()
	sc.Resource.Reliable = true
	if res := runOnce(t, setNXLock(false), Options{TTL: 2 * time.Second}, sc); violated(res.Report.Verdict) != Safe {
		t.Errorf("the counterexample with the store spared: %+v, want safe\n%s", res.Report.Verdict, describe(t, Drop, f))
	}
}
