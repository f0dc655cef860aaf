package runner

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/sim/bubblehost"
)

// traceLines returns the trace texts of one actor that start with prefix.
func traceLines(r *Result, actor, prefix string) []string {
	var out []string
	for _, e := range r.Trace {
		if e.Actor == actor && strings.HasPrefix(e.Text, prefix) {
			out = append(out, e.Text)
		}
	}
	return out
}

// A ZooKeeper lease has no deadline (the session ends it), so the trace
// says so instead of a validity 100 years away; a holder that learned LOST
// and then skips its write says it learned it, not that a clock ran out
// (issue 20 item 8).
func TestZooKeeperHoldTraceSaysTheSessionEndsIt(t *testing.T) {
	bubblehost.Bind(t)
	r := mustRun(t, mustGet(t, "zk-suspended-vs-lost-fixed"), 1, Options{KeepTrace: true})
	holds := traceLines(r, "c1", "holds ")
	if len(holds) == 0 {
		t.Fatal("c1 never holds")
	}
	if h := holds[0]; !strings.HasSuffix(h, ", held until its session is lost)") || strings.Contains(h, "valid until") {
		t.Errorf("hold line %q", h)
	}
	if got := traceLines(r, "c1", "learned it lost the lock: skips the write"); len(got) != 1 {
		t.Errorf("c1 skips its write after LOST %d times in the trace, want once", len(got))
	}
	if got := traceLines(r, "c1", "lease expired on its own clock"); len(got) != 0 {
		t.Errorf("a ZooKeeper holder's lease 'expired on its own clock': %q", got)
	}
}

// go-zookeeper's zk.Lock keeps its node's path to itself: the hold says it
// has no token rather than printing an empty one.
func TestGozkLockHoldSaysNoToken(t *testing.T) {
	bubblehost.Bind(t)
	r := mustRun(t, mustGet(t, "zk-ensemble-minority-partition-stop"), 1, Options{KeepTrace: true})
	holds := traceLines(r, "c1", "holds ")
	if len(holds) == 0 {
		t.Fatal("c1 never holds")
	}
	if want := "holds lock (no token, fence 0, held until its session is lost)"; holds[0] != want {
		t.Errorf("hold line %q, want %q", holds[0], want)
	}
}

// A Redis lease keeps its validity on the client's clock.
func TestRedisHoldTraceKeepsItsValidity(t *testing.T) {
	r := mustRun(t, mustGet(t, "gc-pause-beyond-ttl"), 1, Options{KeepTrace: true})
	holds := traceLines(r, "c1", "holds ")
	if len(holds) == 0 || !strings.Contains(holds[0], "(token ") || !strings.HasSuffix(holds[0], "on its clock)") {
		t.Errorf("hold lines %q", holds)
	}
}
