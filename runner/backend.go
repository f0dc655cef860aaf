package runner

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
)

// Backend builds non-Redis infrastructure (a ZooKeeper ensemble) inside a
// world and connects clients to it.
type Backend interface {
	// Connect returns the client-side handle placed in algorithms.Conns.Backend.
	Connect(host *sim.Host) any
	// Hosts lists the backend's own hosts (for faults and reports).
	Hosts() []*sim.Host
	// Metrics reports backend figures after the run.
	Metrics() []Metric
}

// ServerBackend is a Backend whose servers a node-crash fault may name
// (a ZooKeeper ensemble's zk1…zkN).
type ServerBackend interface {
	Backend
	Servers() map[string]faults.Server
}

// BackendFactory builds a backend for a scenario.
type BackendFactory func(w *sim.World, sc *scenarios.Scenario) (Backend, error)

// BackendInfo is what the runner and the matrix know of one backend:
// how to build it in a world, which of its servers' clocks faults cannot
// move, and its matrix setup. The backend's runtime file (redis.go,
// ensemble.go, postgres.go, … in this package) declares it once by
// RegisterBackend, beside the file-level half that package scenarios
// declares (scenarios.RegisterBackend: params, checks, hosts, standbys,
// metrics' names): one descriptor per backend in each room, and no
// backend-name comparison outside them (docs/architecture.md, "Add a
// backend").
type BackendInfo struct {
	// Name is the algorithms' Info.Backend, as in scenarios.BackendInfo.
	Name string
	// Build builds the backend inside a world (nil for Redis, whose nodes
	// the runner builds from the file).
	Build BackendFactory
	// ClockIgnored says why a clock jump and a drift of one of its servers
	// change nothing (nil: they may); the run warns with it.
	ClockIgnored func(server string) (jump, drift string)
	// Matrix gives the matrix's base scenario for an algorithm on this
	// backend, whose leases last ttl: its number of Redis nodes and its
	// params (nil: one unused Redis node, no params).
	Matrix func(info algorithms.Info, ttl time.Duration) (nodes int, params map[string]string)
	// MatrixFencing turns a matrix base scenario into its "+fencing" row
	// (nil: the backend has no fenced rows).
	MatrixFencing func(sc *scenarios.Scenario)
	// MatrixBubbleRows: its algorithms that run in the bubble are matrix
	// rows all the same (their runs are short).
	MatrixBubbleRows bool
	// OwnWait: its algorithms wait for a held lock their own way and never
	// read the file's wait policy, so the matrix leaves it at the default.
	OwnWait bool
}

var backendInfos = map[string]BackendInfo{}

// RegisterBackend makes a backend's run half available to the
// algorithms whose Info.Backend is b.Name. Call it from an init function
// of the backend's runtime file.
func RegisterBackend(b BackendInfo) {
	if _, dup := backendInfos[b.Name]; dup || b.Name == "" {
		panic(fmt.Sprintf("runner: backend %q registered twice or without a name", b.Name))
	}
	backendInfos[b.Name] = b
}

// LookupBackend returns the run half of the descriptor of the backend called
// name.
func LookupBackend(name string) (BackendInfo, bool) {
	b, ok := backendInfos[name]
	return b, ok
}

// Metric is a named figure a backend reports (for example watch
// notifications in ZooKeeper).
type Metric struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}
