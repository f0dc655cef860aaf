package explore

import (
	"fmt"
	"testing"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
	"pgregory.net/rapid"
)

// sameRunDirect runs sc traced on the wire path and on the direct path and
// fails unless both traces (and so every event, message, fault and reply)
// and verdicts are identical. It returns the commands the direct path took.
func sameRunDirect(t testing.TB, sc *scenarios.Scenario, seed uint64, what string) int {
	t.Helper()
	wire, err := runner.Run(sc, seed, runner.Options{})
	if err != nil {
		t.Fatalf("%s, wire path: %v", what, err)
	}
	direct, err := runner.Run(sc, seed, runner.Options{Direct: true})
	if err != nil {
		t.Fatalf("%s, direct path: %v", what, err)
	}
	if wire.TraceSHA256 != direct.TraceSHA256 || wire.TraceLines != direct.TraceLines {
		t.Fatalf("%s: wire path trace %s (%d lines), direct path %s (%d lines)", what, wire.TraceSHA256, wire.TraceLines, direct.TraceSHA256, direct.TraceLines)
	}
	if wire.Report.Verdict != direct.Report.Verdict {
		t.Fatalf("%s: wire path verdict %+v, direct path %+v", what, wire.Report.Verdict, direct.Report.Verdict)
	}
	if wire.DirectCommands != 0 {
		t.Fatalf("%s: the wire path run counted %d direct commands", what, wire.DirectCommands)
	}
	return direct.DirectCommands
}

// The direct path changes no run: every catalogue scenario, at seeds 1 and
// 7, gives the same trace digest and verdict with it as on the wire, and
// the Redis scenarios did take it.
func TestDirectPathSameDigestsCatalogue(t *testing.T) {
	bubblehost.Bind(t) // the catalogue has real-client scenarios
	all, _ := scenarios.Catalogue()
	taken, redis := 0, 0
	for _, s := range all {
		if s.Clients.Count > 20 {
			continue // the large herds, as in TestGoldenTraces
		}
		info, err := algorithms.Lookup(s.Algorithm)
		if err != nil {
			t.Fatal(err)
		}
		for _, seed := range []uint64{1, 7} {
			n := sameRunDirect(t, s, seed, fmt.Sprintf("%s seed %d", s.ID, seed))
			// The client-clock semaphore sends only transactions, which
			// go-redis keeps (ProcessPipelineHook).
			onlyTx := s.Algorithm == "redis-semaphore" && s.Params["clock"] == "client"
			if info.Backend == "redis" && !info.Bubble && !s.Clients.LibraryRetries && !onlyTx {
				redis++
				if n > 0 {
					taken++
				} else {
					t.Logf("%s seed %d: no command took the direct path", s.ID, seed)
				}
			}
		}
	}
	if redis == 0 || taken != redis {
		t.Fatalf("the direct path was taken in %d of %d Redis runs", taken, redis)
	}
}

// The same holds for explored runs: a rapid sample (pinned seed, see
// TestMain) of explore's draws over the Redis algorithms, every fault
// class, gives the same digests on both paths.
func TestDirectPathSameDigestsExplored(t *testing.T) {
	algs := []string{"redlock", "redlock-spec", "set-nx-px-lua", "set-nx-px-del", "setnx-expire", "reentrant", "redis-semaphore", "redis-rwlock"}
	var bases []*scenarios.Scenario
	for _, a := range algs {
		base, err := Base(a)
		if err != nil {
			continue // an algorithm this tree does not have
		}
		bases = append(bases, base)
	}
	if len(bases) < 3 {
		t.Fatalf("only %d of the Redis algorithms found", len(bases))
	}
	taken := 0
	rapid.Check(t, func(rt *rapid.T) {
		base := rapid.SampledFrom(bases).Draw(rt, "algorithm")
		seed := rapid.Uint64Range(1, 1000).Draw(rt, "explore seed")
		i := rapid.IntRange(1, 5000).Draw(rt, "run")
		sc := exploreRun(base, faults.Classes(), seed, i)
		if sameRunDirect(t, sc, sc.Seed, fmt.Sprintf("explore %s --seed %d, run %d", base.Algorithm, seed, i)) > 0 {
			taken++
		}
	})
	if taken == 0 {
		t.Fatal("no explored run took the direct path")
	}
}
