package explore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"pgregory.net/rapid"
)

// drawSchedule draws a fault schedule with rapid: the classes in play, then
// a schedule from faults.Generate seeded by a drawn value. rapid shrinks the
// class set and the seed; the last call of a failing property is its
// minimal input.
func drawSchedule(t *rapid.T, sc *scenarios.Scenario, classes []faults.Class, names faults.Names) faults.Schedule {
	on := rapid.SliceOfNDistinct(rapid.SampledFrom(classes), 1, len(classes), func(c faults.Class) faults.Class { return c }).Draw(t, "classes")
	seed := rapid.Uint64().Draw(t, "schedule seed")
	return faults.Generate(rand.New(rand.NewPCG(seed, 0)), on, names, matrix.Horizon, sc.TTL.D())
}

func drawWorkload(t *rapid.T, sc *scenarios.Scenario) {
	sc.Clients.Count = rapid.IntRange(2, 4).Draw(t, "clients")
	sc.Clients.Cycles = rapid.IntRange(1, 3).Draw(t, "cycles")
	hi := time.Duration(rapid.IntRange(50, 1800).Draw(t, "max work ms")) * time.Millisecond
	sc.Clients.Work = scenarios.ExplicitRange(hi/4, hi)
}

// Fenced locks never let a stale write through: whatever the faults do to
// the lock, the resource's accepted writes stay serial. The token counter
// (node T) is kept out of the faults' reach: a counter that loses writes is
// fencing-token-failover-regression's subject, not this property's.
func TestPropertyFencedLocksNeverAcceptStaleWrites(t *testing.T) {
	for _, alg := range []string{"set-nx-px-lua", "set-nx-px-del", "redlock", "reentrant"} {
		t.Run(alg, func(t *testing.T) {
			base, err := matrix.Base(alg)
			if err != nil {
				t.Fatal(err)
			}
			base.Params = map[string]string{algorithms.ParamTokenSource: "incr"}
			base.Nodes = append(base.Nodes, scenarios.Node{Name: "T", Role: "tokens"})
			base.Resource.TokenCheck = ">"
			rapid.Check(t, func(t *rapid.T) {
				sc := base.Clone()
				drawWorkload(t, sc)
				names := matrix.GeneratorNames(sc)
				names.Nodes = sc.NodeNames()[:len(sc.Nodes)-1] // not T
				sc.Faults = drawSchedule(t, sc, faults.Classes(), names)
				if err := sc.Validate(); err != nil {
					t.Fatalf("drawn scenario invalid: %v", err)
				}
				seed := rapid.Uint64Range(1, 1<<40).Draw(t, "run seed")
				res, err := runner.Run(sc, seed, runner.Options{NoTrace: true})
				if err != nil {
					t.Fatal(err)
				}
				if res.Report.Verdict.Resource == checker.Violated {
					t.Fatalf("stale write accepted: %s\nfaults: %s", res.Report.Witness.Resource, describeSchedule(sc.Faults))
				}
			})
		})
	}
}

// Redlock keeps mutual exclusion when nodes never forget (appendfsync
// always, or a restart delayed past the TTL) and nothing else goes wrong:
// no clock faults, no pauses, and no fault that can stretch a holder's
// critical section past its lease. Since holds are judged on behaviour, a
// holder that waits for a delayed or lost message to the resource (1 s
// timeout) goes on holding past its TTL — it never looks at the deadline
// again — so drops, delays and partitions alone can give two holders, as
// Kleppmann argues; the explore tests and the matrix exercise those
// classes. What is left is Redlock's own claim: node crashes and restarts
// that lose nothing cannot move the majority.
func TestPropertyRedlockSafeWithinItsAssumptions(t *testing.T) {
	base, err := matrix.Base("redlock")
	if err != nil {
		t.Fatal(err)
	}
	classes := []faults.Class{faults.ClassCrash, faults.ClassRestart}
	rapid.Check(t, func(t *rapid.T) {
		sc := base.Clone()
		drawWorkload(t, sc)
		sc.Faults = drawSchedule(t, sc, classes, matrix.GeneratorNames(sc))
		for i := range sc.Faults {
			f := &sc.Faults[i]
			if f.Kind != faults.NodeCrash {
				continue
			}
			if rapid.Bool().Draw(t, fmt.Sprintf("fault %d fsync always", i)) {
				f.Persistence = "always"
			} else if f.RestartAfter > 0 && f.RestartAfter.D() <= sc.TTL.D() {
				f.RestartAfter = scenarios.Duration(sc.TTL.D() + 100*time.Millisecond)
			}
		}
		seed := rapid.Uint64Range(1, 1<<40).Draw(t, "run seed")
		res, err := runner.Run(sc, seed, runner.Options{NoTrace: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.Verdict.MutualExclusion == checker.Violated {
			t.Fatalf("two holders: %s\nfaults: %s", res.Report.Witness.MutualExclusion, describeSchedule(sc.Faults))
		}
	})
}

// Each unsafe algorithm is caught within a bounded number of random runs,
// and the counterexample shrinks small.
func TestExploreCatchesUnsafeAlgorithms(t *testing.T) {
	bubblehost.Bind(t) // gozk-queue runs the real go-zookeeper client
	cases := []struct {
		alg        string
		classes    []faults.Class
		prop       string
		maxFaults  int
		maxClients int
	}{
		{"redlock", []faults.Class{faults.ClassClock}, "mutual_exclusion", 3, 2},
		{"set-nx-px-del", []faults.Class{faults.ClassPause}, "", 3, 3},
		// A holder paused past its TTL goes on holding (it never looks at
		// its deadline), so the first finding is two holders, not only the
		// lost update that follows.
		{"set-nx-px-lua", []faults.Class{faults.ClassPause}, "mutual_exclusion", 3, 3},
		{"setnx-expire", []faults.Class{faults.ClassCrash}, "liveness", 3, 3},
		{"set-nx-px-lua", []faults.Class{faults.ClassRestart}, "mutual_exclusion", 3, 3},
		{"gozk-queue", []faults.Class{faults.ClassPause}, "", 3, 3},
	}
	for _, c := range cases {
		t.Run(c.alg+"/"+string(c.classes[0]), func(t *testing.T) {
			res, err := Explore(Options{Algorithm: c.alg, Classes: c.classes, Seed: 1, Runs: 400})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Findings) == 0 {
				t.Fatalf("no violation in %d runs", res.Runs)
			}
			f := res.Findings[0]
			if c.prop != "" && f.Property != c.prop {
				t.Fatalf("found %s, want %s", f.Property, c.prop)
			}
			if f.Minimal == nil {
				t.Fatal("the violation did not survive shrinking")
			}
			if len(f.Minimal.Faults) > c.maxFaults || f.Minimal.Clients.Count > c.maxClients {
				t.Fatalf("minimal counterexample has %d faults and %d clients, want at most %d and %d: %s",
					len(f.Minimal.Faults), f.Minimal.Clients.Count, c.maxFaults, c.maxClients, describeSchedule(f.Minimal.Faults))
			}
			if !scenarios.Violates(f.MinimalResult.Report.Verdict, f.Property) || !f.MinimalResult.Matches() {
				t.Fatal("the minimal counterexample does not reproduce its own expectation")
			}
			// It replays byte for byte.
			again, err := runner.Run(f.Minimal, f.Minimal.Seed, runner.Options{})
			if err != nil || again.TraceSHA256 != f.MinimalResult.TraceSHA256 {
				t.Fatalf("replay gave trace %s, want %s (%v)", again.TraceSHA256, f.MinimalResult.TraceSHA256, err)
			}
		})
	}
}

// The result of an exploration does not depend on how many workers ran it.
func TestExploreIndependentOfWorkers(t *testing.T) {
	one, err := Explore(Options{Algorithm: "set-nx-px-del", Classes: []faults.Class{faults.ClassPause}, Seed: 3, Runs: 200, Workers: 1, All: true, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	four, err := Explore(Options{Algorithm: "set-nx-px-del", Classes: []faults.Class{faults.ClassPause}, Seed: 3, Runs: 200, Workers: 4, All: true, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Findings) == 0 || len(one.Findings) != len(four.Findings) {
		t.Fatalf("%d findings with one worker, %d with four", len(one.Findings), len(four.Findings))
	}
	for i := range one.Findings {
		if one.Findings[i].Run != four.Findings[i].Run || one.Findings[i].Property != four.Findings[i].Property {
			t.Fatalf("finding %d differs: run %d/%s against %d/%s", i, one.Findings[i].Run, one.Findings[i].Property, four.Findings[i].Run, four.Findings[i].Property)
		}
	}
}

// The runs a sweep reports are what it covered — every run up to its first
// violation — not how many its workers happened to finish: a worker busy
// with a higher run when a lower one violates still finishes it, and how
// many did depended on the machine's pace (it read 9 or 10 for one seed
// under -race). With one worker and with eight, on a sweep whose first
// violation is not its first run, and on shards.
func TestExploreRunsIndependentOfWorkers(t *testing.T) {
	explore := func(workers, shard, shards int) *Result {
		t.Helper()
		res, err := Explore(Options{Algorithm: "set-nx-px-lua", Classes: []faults.Class{faults.ClassDrop}, Seed: 4, Runs: 300, Workers: workers, NoShrink: true, Shard: shard, Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	one := explore(1, 0, 0)
	if len(one.Findings) != 1 || one.Findings[0].Run < 3 {
		t.Fatalf("one worker: findings %d, want one past run 2 for this test to mean something", len(one.Findings))
	}
	if one.Runs != one.Findings[0].Run {
		t.Fatalf("one worker: %d runs reported, first violation at run %d", one.Runs, one.Findings[0].Run)
	}
	for i := 0; i < 5; i++ {
		if eight := explore(8, 0, 0); eight.Runs != one.Runs || eight.Findings[0].Run != one.Findings[0].Run {
			t.Fatalf("eight workers: %d runs, first violation at %d; one worker: %d runs, at %d", eight.Runs, eight.Findings[0].Run, one.Runs, one.Findings[0].Run)
		}
	}
	// Shard 2 of 3 covers runs 2, 5, 8, ...: up to its own first violation.
	sh := explore(8, 2, 3)
	if len(sh.Findings) == 1 {
		if want := (sh.Findings[0].Run-2)/3 + 1; sh.Runs != want {
			t.Fatalf("shard 2/3: %d runs reported, first violation at run %d (its %d-th run)", sh.Runs, sh.Findings[0].Run, want)
		}
	}
	if clean := explore(8, 0, 0); clean.Runs != one.Runs {
		t.Fatalf("again: %d runs", clean.Runs)
	}
}
