package runner

import (
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
)

// The Redis backend's run half: its nodes are the file's, which the
// runner builds itself (run.go), so it has no Build; its matrix setup.
func init() {
	RegisterBackend(BackendInfo{
		Name: algorithms.Backend,
		// As many nodes as the algorithm needs (A, B, ...), five for a
		// quorum algorithm.
		Matrix: func(info algorithms.Info, _ time.Duration) (int, map[string]string) {
			nodes := max(info.MinNodes, 1)
			if info.MinNodes >= 3 {
				nodes = max(info.MinNodes, 5)
			}
			return nodes, nil
		},
		// Fencing tokens from INCR on a separate node T, which the
		// matrix's faults leave alone (matrix.GeneratorNames).
		MatrixFencing: func(sc *scenarios.Scenario) {
			sc.Params[algorithms.ParamTokenSource] = "incr"
			sc.Nodes = append(sc.Nodes, scenarios.Node{Name: "T", Role: "tokens"})
		},
	})
}

// IsRedisNode reports whether h is one of the file's Redis nodes: its role
// is "redis", "redis replica of A" or "redis tokens" (Run).
func (h Host) IsRedisNode() bool { return strings.HasPrefix(h.Role, algorithms.Backend) }
