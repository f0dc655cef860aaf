package differential

import (
	"testing"

	"github.com/locklab/locklab/sim/internal/realredis"
	"pgregory.net/rapid"
)

// TestDifferentialReplication drives random sequences into a master with
// one replica, on both sides: a real redis-server following another with
// REPLICAOF, and a simulated master whose writes reach its replica through
// the simulated replication stream. The replica is read during the run (on
// the real side only once its offset matches the master's), and its whole
// dataset at the end; half the sequences promote the replica (REPLICAOF NO
// ONE / RedisNode.Promote) half-way and go on writing to it.
func TestDifferentialReplication(t *testing.T) {
	master := realredis.Start(t, realredis.Options{Extra: []string{
		// A replica that re-attaches after a promotion needs a full
		// resync; without these the master waits 5 s before starting one.
		"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
	}})
	replica := realredis.Start(t, realredis.Options{})
	real := newRealSide(t, master, replica)
	var checks, skipped int
	rapid.Check(t, func(t *rapid.T) {
		checks++
		cfg := simConfig{replica: true, plainLua: rapid.Bool().Draw(t, "plain-lua")}
		var steps []step
		for range rapid.IntRange(1, 10).Draw(t, "steps") {
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 9:
				steps = append(steps, advance(t))
			case 7, 8:
				steps = append(steps, replicaCommand(t))
			default:
				steps = append(steps, command(t, 1))
			}
		}
		if rapid.Bool().Draw(t, "promote") {
			steps = append(steps, step{kind: promoteStep})
			for range rapid.IntRange(0, 6).Draw(t, "after") {
				if rapid.IntRange(0, 9).Draw(t, "advance-after?") == 9 {
					steps = append(steps, advance(t))
					continue
				}
				s := command(t, 0)
				s.node = 1
				steps = append(steps, s)
			}
		}
		steps = append(steps, probe(1)...)
		differential(t, "replication", steps,
			[]string{"# master and replica: FLUSHALL and SCRIPT FLUSH on the master, SCRIPT FLUSH on the replica"},
			real.emptied, real.begin,
			func(phases []int) runResult {
				res, err := runSim(cfg, steps, phases)
				if err != nil {
					t.Fatalf("simulation failed: %v", err)
				}
				return res
			}, &skipped)
	})
	countSkipped(t, &skipped, &checks)
}
