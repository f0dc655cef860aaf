package differential

import (
	"testing"

	"github.com/locklab/locklab/sim/internal/realredis"
	"pgregory.net/rapid"
)

// TestDifferentialPersistence drives random sequences into a node with
// appendonly yes and appendfsync always, kills it with SIGKILL part-way
// (no shutdown, no last fsync) and restarts it from its append-only file;
// the simulated node does RedisNode.Crash and Restart("always") at the
// same phase. Replies before and after, and the dataset at the end, must
// agree: every acknowledged write survives, with its expiry.
func TestDifferentialPersistence(t *testing.T) {
	t.Parallel()
	srv := realredis.Start(t, realredis.Options{AppendOnly: true, AppendFsync: "always"})
	real := newRealSide(t, srv)
	var tally tally
	rapid.Check(t, func(t *rapid.T) {
		cfg := simConfig{plainLua: rapid.Bool().Draw(t, "plain-lua")}
		steps := rapid.SliceOfN(masterStep(0), 1, 10).Draw(t, "before")
		steps = append(steps, step{kind: crashStep})
		steps = append(steps, rapid.SliceOfN(masterStep(0), 0, 4).Draw(t, "after")...)
		steps = append(steps, probe(0)...)
		differential(t, "persistence", steps,
			[]string{"(redis-server --appendonly yes --appendfsync always)", "FLUSHALL", "SCRIPT FLUSH"},
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
