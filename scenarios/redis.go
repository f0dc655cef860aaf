package scenarios

import (
	"github.com/locklab/locklab/algorithms"
)

// The Redis backend: its locks live on the file's nodes (nodes:), which the
// runner builds itself (runner/run.go) — lock nodes, replicas and the fencing
// token node — so it has no Build and no hosts of its own. Its options
// (fencing by INCR, the watchdog, …) are algorithms.RedisParams.
func init() {
	RegisterBackend(BackendInfo{
		Name:        algorithms.Backend,
		RedisNodes:  true,
		Params:      algorithms.RedisParams,
		ParamsTitle: "every redis algorithm",
	})
}
