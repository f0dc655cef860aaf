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
	srv := realredis.Start(t, realredis.Options{})
	real := newRealSide(t, srv)
	var checks, skipped int
	rapid.Check(t, func(t *rapid.T) {
		checks++
		cfg := simConfig{plainLua: rapid.Bool().Draw(t, "plain-lua")}
		var steps []step
		for range rapid.IntRange(1, 12).Draw(t, "steps") {
			if rapid.IntRange(0, 9).Draw(t, "advance?") == 9 {
				steps = append(steps, advance(t))
			} else {
				steps = append(steps, command(t, 0))
			}
		}
		steps = append(steps, probe(0)...)
		differential(t, "single node", steps, []string{"FLUSHALL", "SCRIPT FLUSH"},
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
