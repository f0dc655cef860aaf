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
	t.Parallel()
	// Either server is master in turn (a promotion swaps them). A full
	// resync, when one is needed, goes through a file: a diskless one
	// keeps the replica out of WAIT until its first once-a-second ack.
	opts := realredis.Options{Extra: []string{"--repl-diskless-sync", "no"}}
	master := realredis.Start(t, opts)
	replica := realredis.Start(t, opts)
	real := newRealSide(t, master, replica)
	var tally tally
	rapid.Check(t, func(t *rapid.T) {
		cfg := simConfig{replica: true, plainLua: rapid.Bool().Draw(t, "plain-lua")}
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) step {
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 9:
				return advance(t)
			case 7, 8:
				return replicaCommand(t)
			}
			return command(t, 1)
		}), 1, 10).Draw(t, "steps")
		if rapid.IntRange(0, 2).Draw(t, "stall?") == 0 {
			// The replica stops taking in its stream while the master goes
			// on (no WAIT: it would wait for the stopped replica) across at
			// least one phase, then catches up: expiries set meanwhile must
			// still fall at the master's absolute time.
			noWait := masterStep(1).Filter(notWait)
			steps = append(steps, step{kind: stallStep})
			steps = append(steps, rapid.SliceOfN(noWait, 0, 4).Draw(t, "stalled")...)
			steps = append(steps, advance(t), step{kind: resumeStep})
			steps = append(steps, rapid.SliceOfN(rapid.Custom(replicaCommand), 0, 3).Draw(t, "after-stall")...)
		}
		if rapid.Bool().Draw(t, "promote") {
			steps = append(steps, step{kind: promoteStep})
			// The promoted replica is node 1 and has no replica of its own.
			// No WAIT after it: RedisNode.Promote is Sentinel's failover,
			// which turns the old master into a replica of the new one
			// 100 ms later (sim/replication.go, rejoin), and the real test's
			// bare REPLICAOF NO ONE does not, so from then on WAIT counts
			// one replica in the simulation and none on the real server.
			// Sequences reached that instant mostly once a loaded machine
			// coarsened the grid (an 80 ms grid put WAIT 0 at 160 ms).
			for _, s := range rapid.SliceOfN(masterStep(0).Filter(notWait), 0, 6).Draw(t, "after") {
				if s.kind == cmdStep {
					s.node = 1
				}
				steps = append(steps, s)
			}
		}
		steps = append(steps, probe(1)...)
		differential(t, "replication", steps,
			[]string{"FLUSHALL", "SCRIPT FLUSH", "replica> SCRIPT FLUSH"},
			real.emptied, real.begin,
			func(g grid, phases []int) runResult {
				res, err := runSim(cfg, steps, phases, g)
				if err != nil {
					t.Fatalf("simulation failed: %v", err)
				}
				return res
			}, &tally)
	})
	tally.report(t)
}

// notWait is every step but a WAIT command.
func notWait(s step) bool { return s.kind != cmdStep || s.args[0] != "WAIT" }
