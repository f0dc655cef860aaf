package matrix

import (
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// The matrix and explore setup waits TTL/8 (+ up to TTL/16) between a
// waiter's tries for every lock that reads the wait policy; a user's own
// lock (locktest) and the ZooKeeper recipes, which wait their own way,
// keep the default, so their saved counterexamples read as before.
func TestMatrixWaitersPollLess(t *testing.T) {
	for _, name := range append(algorithms.Names(), algorithms.Custom) {
		sc, err := Base(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		info, _ := algorithms.Lookup(name)
		want := scenarios.Wait{Delay: scenarios.Duration(TTL / 8), Jitter: scenarios.Duration(TTL / 16)}
		if name == algorithms.Custom || info.Backend == "zookeeper-ensemble" {
			want = scenarios.Wait{Delay: scenarios.Duration(100 * time.Millisecond), Jitter: scenarios.Duration(50 * time.Millisecond)}
		}
		if sc.Wait != want {
			t.Errorf("%s: matrix wait %+v, want %+v", name, sc.Wait, want)
		}
	}
}

// On the exploration yardstick (Redlock, 5 nodes, 5 clients × 3 cycles,
// 10 s), the matrix's wait sends about half the commands the default
// 100ms + 50ms sent, for the same runs: most of those were waiters
// polling a held key. The lock stays as busy (holds per run).
func TestMatrixWaitSendsFewerCommands(t *testing.T) {
	base, err := Base("redlock")
	if err != nil {
		t.Fatal(err)
	}
	base.Clients.Count, base.Clients.Cycles, base.Duration = 5, 3, scenarios.Duration(10*time.Second)
	old := base.Clone()
	old.Wait = scenarios.Wait{Delay: scenarios.Duration(100 * time.Millisecond), Jitter: scenarios.Duration(50 * time.Millisecond)}
	for seed := uint64(1); seed <= 3; seed++ {
		now, err := runner.Run(base, seed, runner.Options{NoTrace: true, Direct: true})
		if err != nil {
			t.Fatal(err)
		}
		before, err := runner.Run(old, seed, runner.Options{NoTrace: true, Direct: true})
		if err != nil {
			t.Fatal(err)
		}
		if 5*now.DirectCommands >= 3*before.DirectCommands {
			t.Errorf("seed %d: %d commands with the matrix wait, %d with the default; want under 60%%", seed, now.DirectCommands, before.DirectCommands)
		}
		if len(now.History.Intervals) < len(before.History.Intervals)-2 {
			t.Errorf("seed %d: %d holds with the matrix wait, %d with the default; want the lock as busy", seed, len(now.History.Intervals), len(before.History.Intervals))
		}
	}
}
