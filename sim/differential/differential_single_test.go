package differential

import (
	"testing"

	"github.com/locklab/locklab/sim/internal/realredis"
	"pgregory.net/rapid"
)

// TestDifferentialSingleNode drives random sequences of the lock vocabulary,
// with waits across expiries, into one simulated node and one real
// redis-server, and compares every reply and the final dataset.
func TestDifferentialSingleNode(t *testing.T) {
	t.Parallel()
	srv := realredis.Start(t, realredis.Options{})
	real := newRealSide(t, srv)
	var tally tally
	rapid.Check(t, func(t *rapid.T) {
		cfg := simConfig{plainLua: rapid.Bool().Draw(t, "plain-lua")}
		steps := rapid.SliceOfN(masterStep(0), 1, 12).Draw(t, "steps")
		steps = append(steps, probe(0)...)
		differential(t, "single node", steps, []string{"FLUSHALL", "SCRIPT FLUSH"},
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
