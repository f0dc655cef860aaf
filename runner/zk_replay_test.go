package runner

import (
	"os"
	"strings"
	"testing"

	"github.com/locklab/locklab/sim/bubblehost"
	"github.com/locklab/locklab/sim/proptest"
)

// goldenDigest is the digest testdata/golden-traces.txt pins for id at
// seed ("1", "7").
func goldenDigest(t *testing.T, id, seed string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/golden-traces.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == id && f[1] == seed {
			return f[2]
		}
	}
	t.Fatalf("no golden digest for %s seed %s", id, seed)
	return ""
}

// TestZKLostCreateReplyReplays runs zk-lost-create-reply at seed 1 again
// and again: every run must give the golden trace. Its naive recipe used
// to race go-zookeeper's reconnect loop (gozk's pauseAfterLoss; the
// deterministic test of that race is gozk's
// TestNaiveRecreateGoesOnNextConnection), and about one run in a few
// hundred under -race found its node instead of leaving an orphan (77
// trace lines instead of 140). A few runs here; LOCKLAB_DEEP=1 runs 2000.
func TestZKLostCreateReplyReplays(t *testing.T) {
	bubblehost.Bind(t)
	runs := 10
	if proptest.Deep() {
		runs = 2000
	}
	sc := mustGet(t, "zk-lost-create-reply")
	want := goldenDigest(t, sc.ID, "1")
	for i := 0; i < runs; i++ {
		r := mustRun(t, sc, 1, Options{})
		if r.TraceSHA256 != want || !r.Matches() {
			t.Fatalf("run %d: trace %s (%d lines), golden %s; verdict matches expectations: %v", i, r.TraceSHA256, r.TraceLines, want, r.Matches())
		}
	}
}
