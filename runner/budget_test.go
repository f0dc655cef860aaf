package runner

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/bubblehost"
)

// Inputs of issue 25 that never ended, ended in gigabytes, or ended with
// exit 2 and no verdict. Each now ends at its work budget with a verdict
// on the history up to the cut. The budgets are small to keep the tests
// quick; the RSS sweep (scripts/rss-sweep) runs such inputs at the
// default budget.
var unboundedInputs = []struct {
	name, yaml string
	duration   time.Duration // raises Limits.Duration
	// liveness is the verdict expected on the history up to the cut.
	liveness checker.Status
}{
	{name: "every request dropped", yaml: `id: every-request-dropped
algorithm: set-nx-px-lua
ttl: 10s
nodes: [A]
clients: {count: 1, cycles: 3}
duration: 24h
faults:
  - {kind: drop, at: 0s, dir: request}
`, liveness: checker.Violated},
	// Each client's application calls again after every timeout, after
	// its think time (issue 31): 100-150 ms, so that the budget lasts
	// past the liveness bound (21 s) before it cuts the run.
	{name: "dropped replies, 100 clients", yaml: `id: dropped-replies-100-clients
algorithm: set-nx-px-lua
ttl: 10s
nodes: [A]
clients: {count: 100, cycles: 3, think: 100ms..150ms}
duration: 24h
faults:
  - {kind: drop, at: 0s, dir: reply}
`, liveness: checker.Violated},
	{name: "100 gozk-simple clients", yaml: `id: gozk-simple-100-clients
algorithm: gozk-simple
ttl: 10s
params: {zk_servers: "1"}
clients: {count: 100, cycles: 200}
duration: 24h
`, liveness: checker.OK},
	{name: "a year of drops", yaml: `id: a-year-of-drops
algorithm: set-nx-px-lua
ttl: 10s
nodes: [A]
clients: {count: 10, cycles: 10}
duration: 8760h
faults:
  - {kind: drop, at: 0s, dir: request, duration: 8760h}
`, duration: 8760 * time.Hour, liveness: checker.OK}, // a drop rule that heals excuses what it blocks
}

// maxBytesPerWork bounds what a run allocates per unit of work (an event
// scheduled or a message lost), garbage included. Measured 0.4–3.2 KB on
// these inputs; a run that kept a dead connection or a message per step
// would still pass this, but a run that no budget stops does not end.
const maxBytesPerWork = 8 << 10

func TestUnboundedInputsEndWithAVerdictAtTheBudget(t *testing.T) {
	bubblehost.Bind(t) // gozk-simple runs the real go-zookeeper client
	const budget = 60_000
	for _, in := range unboundedInputs {
		t.Run(in.name, func(t *testing.T) {
			lim := scenarios.DefaultLimits
			if in.duration > 0 {
				lim.Duration = in.duration
			}
			sc, err := scenarios.ParseWith("hostile.yaml", []byte(in.yaml), lim)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := Run(sc, 1, Options{MaxWork: budget})
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("no verdict: %v", err)
			}
			s := res.Stopped
			if s == nil || s.Limit != sim.LimitWork || s.Budget != budget || s.At != res.End || res.End >= sc.Duration.D() {
				t.Fatalf("stopped = %+v, end %v of %v", s, res.End, sc.Duration)
			}
			// The kernel checks the budget between events: one event's
			// work (a reply and the timer it cancels) at most passes it.
			if res.Work <= budget || res.Work > budget+10 || s.Work != res.Work {
				t.Fatalf("work %d, stopped at %d: the budget is %d", res.Work, s.Work, budget)
			}
			if !strings.Contains(s.Hint, "--max-work") {
				t.Fatalf("hint %q does not say how to raise the budget", s.Hint)
			}
			if got := res.Report.Verdict.Liveness; got != in.liveness {
				t.Fatalf("liveness %s, want %s up to the cut at %v", got, in.liveness, res.End)
			}
			per := (after.TotalAlloc - before.TotalAlloc) / uint64(res.Work)
			t.Logf("%d bytes allocated per unit of work, cut at %v", per, res.End)
			if per > maxBytesPerWork {
				t.Fatalf("%d bytes allocated per unit of work (bound %d)", per, maxBytesPerWork)
			}
			// What is still open at the cut ends there, and says so.
			waiting := 0
			for _, wt := range res.History.Wants {
				if wt.Outcome == "end of run" {
					t.Fatalf("want %+v: a run cut short has no end of run", wt)
				}
				if wt.Outcome == CutShort {
					waiting++
				}
			}
			if waiting == 0 {
				t.Fatal("no client was waiting at the cut")
			}
		})
	}
}

// A run the budget does not reach is not marked: the catalogue's runs end
// at their duration or when their clients are done.
func TestRunWithinTheBudgetIsNotStopped(t *testing.T) {
	sc, err := scenarios.Get("del-wrong-client")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc, 1, Options{})
	if err != nil || res.Stopped != nil || res.Work == 0 || !res.Matches() {
		t.Fatalf("err %v, stopped %+v, work %d, matches %v", err, res.Stopped, res.Work, res != nil && res.Matches())
	}
	// The same run under a budget of 100 ends at once, judged up to there.
	cut, err := Run(sc, 1, Options{MaxWork: 100})
	if err != nil || cut.Stopped == nil || cut.End >= res.End || cut.History.End != cut.End {
		t.Fatalf("err %v, stopped %+v, end %v (whole run %v)", err, cut.Stopped, cut.End, res.End)
	}
}

// Where the budget cuts a run depends on the seed and the budget only:
// the same run cut short gives the same trace, byte for byte, at any
// GOMAXPROCS, under the baton and in a bubble (the real go-zookeeper
// client).
func TestRunCutShortIsDeterministic(t *testing.T) {
	bubblehost.Bind(t)
	gozk := `id: gozk-herd
algorithm: gozk-simple
ttl: 10s
clients: {count: 20, cycles: 20, work: 0s, think: 0s}
duration: 24h
`
	for _, text := range []string{unboundedInputs[0].yaml, gozk} {
		sc, err := scenarios.Parse("x.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		var digests []string
		for _, procs := range []int{1, 2, 1} {
			old := runtime.GOMAXPROCS(procs)
			res, err := Run(sc, 3, Options{MaxWork: 20_000})
			runtime.GOMAXPROCS(old)
			if err != nil || res.Stopped == nil {
				t.Fatalf("%s: err %v, stopped %+v", sc.ID, err, res.Stopped)
			}
			digests = append(digests, fmt.Sprintf("%s at %v, work %d", res.TraceSHA256, res.Stopped.At, res.Work))
		}
		if digests[0] != digests[1] || digests[0] != digests[2] {
			t.Fatalf("%s: %q", sc.ID, digests)
		}
	}
}
