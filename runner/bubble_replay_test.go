package runner

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
	"github.com/locklab/locklab/sim/proptest"
)

// bubbleReplayRuns is how many times TestBubbleScenariosReplay runs each
// scenario at each seed and GOMAXPROCS: LOCKLAB_BUBBLE_RUNS=N if set, 50
// in the deep suite (LOCKLAB_DEEP=1), 1 otherwise — and then at
// GOMAXPROCS 1 only, beside TestGoldenTraces at the machine's (CI time is
// dear, see issue 19; the test takes about 10 s under -race).
func bubbleReplayRuns(t *testing.T) int {
	if s := os.Getenv("LOCKLAB_BUBBLE_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LOCKLAB_BUBBLE_RUNS=%q: want a positive number of runs", s)
		}
		return n
	}
	if proptest.Deep() {
		return 50
	}
	return 1
}

// bubbleScenarios are the catalogue's scenarios whose clients are real
// libraries run inside testing/synctest bubbles (go-zookeeper, pgx,
// database/sql, go-sql-driver/mysql): the runs where the Go scheduler,
// not the kernel, could pick between two runnable goroutines.
func bubbleScenarios(t *testing.T) []*scenarios.Scenario {
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var out []*scenarios.Scenario
	for _, s := range all {
		info, err := algorithms.Lookup(s.Algorithm)
		if err != nil || !info.Bubble || s.Clients.Count > 20 {
			continue // large scenarios are covered by their own tests
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		t.Fatal("no real-client scenario in the catalogue")
	}
	return out
}

// TestBubbleScenariosReplay runs every real-client scenario of the
// catalogue many times in one process, at GOMAXPROCS 1 and 2, and asks
// for the golden trace every time: one seed, one trace, whatever the Go
// scheduler does with the library's goroutines (docs/design.md, principle 1).
// A divergence that shows once in a few hundred runs is a race between two
// runnable goroutines with no kernel door between them (gozk's
// pauseAfterLoss is the first one found). Under load and -race it shows
// more often, which is what the deep suite wants.
func TestBubbleScenariosReplay(t *testing.T) {
	bubblehost.Bind(t)
	runs := bubbleReplayRuns(t)
	scs := bubbleScenarios(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	procsList := []int{1, 2}
	if runs == 1 {
		procsList = []int{1}
	}
	for _, procs := range procsList {
		runtime.GOMAXPROCS(procs)
		for _, sc := range scs {
			for _, seed := range []uint64{1, 7} {
				want := goldenDigest(t, sc.ID, strconv.FormatUint(seed, 10))
				diverged := 0
				var first string
				for i := 0; i < runs; i++ {
					r := mustRun(t, sc, seed, Options{})
					if r.TraceSHA256 != want {
						if diverged == 0 {
							first = "run " + strconv.Itoa(i) + ": trace " + r.TraceSHA256 + " (" + strconv.Itoa(r.TraceLines) + " lines)"
						}
						diverged++
					}
				}
				t.Logf("%s seed %d, GOMAXPROCS %d: %d of %d runs left the golden trace", sc.ID, seed, procs, diverged, runs)
				if diverged > 0 {
					t.Errorf("%s seed %d, GOMAXPROCS %d: %d of %d runs left the golden trace %s; first %s", sc.ID, seed, procs, diverged, runs, want, first)
				}
			}
		}
	}
}
