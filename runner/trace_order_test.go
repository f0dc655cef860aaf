package runner

import (
	"strings"
	"testing"
)

// At the failover instant of sentinel-split-brain the new master B expires
// the lock key it inherited and propagates the DEL: the trace prints the
// promotion first, then its effect (issue 20 item 8: the DEL came first).
func TestFailoverTracesThePromotionBeforeItsEffects(t *testing.T) {
	r := mustRun(t, mustGet(t, "sentinel-split-brain"), 1, Options{KeepTrace: true})
	promoted, expired := -1, -1
	for i, e := range r.Trace {
		switch {
		case e.Actor == "B" && strings.HasPrefix(e.Text, "failover: B promoted to master") && promoted < 0:
			promoted = i
		case e.Actor == "B" && strings.HasPrefix(e.Text, "key lock expired") && expired < 0:
			expired = i
		}
	}
	if promoted < 0 || expired < 0 {
		t.Fatalf("trace lacks the promotion (%d) or B's expiry (%d)", promoted, expired)
	}
	if r.Trace[promoted].At != r.Trace[expired].At {
		t.Fatalf("promotion at %v, expiry at %v: the scenario no longer puts them at one instant", r.Trace[promoted].At, r.Trace[expired].At)
	}
	if expired < promoted {
		t.Errorf("B's expiry (line %d) is printed before its promotion (line %d)", expired, promoted)
	}
}
