package scenarios

import (
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
)

// The Redis backend: its locks live on the file's nodes (nodes:), which the
// runner builds itself (run.go) — lock nodes, replicas and the fencing
// token node — so it has no Build and no hosts of its own. Its options
// (fencing by INCR, the watchdog, …) are algorithms.RedisParams.
func init() {
	RegisterBackend(BackendInfo{
		Name:        algorithms.Backend,
		RedisNodes:  true,
		Params:      algorithms.RedisParams,
		ParamsTitle: "every redis algorithm",
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
		MatrixFencing: func(sc *Scenario) {
			sc.Params["fencing"] = "incr"
			sc.Nodes = append(sc.Nodes, Node{Name: "T", Role: "tokens"})
		},
	})
}

// IsRedisNode reports whether h is one of the file's Redis nodes: its role
// is "redis", "redis replica of A" or "redis tokens" (Run).
func (h Host) IsRedisNode() bool { return strings.HasPrefix(h.Role, algorithms.Backend) }
