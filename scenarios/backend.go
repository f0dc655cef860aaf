package scenarios

import (
	"fmt"
	"sort"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
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
type BackendFactory func(w *sim.World, sc *Scenario) (Backend, error)

// BackendInfo is everything the runner, the file check, the matrix and
// the command line know of one backend, declared once in the backend's own
// file (redis.go, ensemble.go, postgres.go, …) by RegisterBackend, as
// algorithms.Register declares an algorithm. Code outside that file asks
// the descriptor (backendOf) and never compares the backend's name: a new
// backend is its package, its descriptor and its algorithms
// (docs/architecture.md, "Add a backend").
type BackendInfo struct {
	// Name is the algorithms' Info.Backend.
	Name string
	// RedisNodes says the locks live on the file's Redis nodes (nodes:):
	// the runner builds them, MinNodes counts their lock nodes, and a
	// client's lease deadline is read on its own clock. Only Redis.
	RedisNodes bool
	// Hosts lists the host names Build will create for a scenario, so
	// fault schedules can name them before the run (nil: none).
	Hosts func(sc *Scenario) []string
	// Build builds the backend inside a world (nil for Redis, whose nodes
	// the runner builds from the file).
	Build BackendFactory
	// Crashable: Build's result is a ServerBackend, and its hosts are
	// valid node-crash targets (faults.Names.Servers).
	Crashable bool
	// Standbys lists the servers a failover may promote (nil: none).
	Standbys func(sc *Scenario) []string
	// Params are the params the backend reads, for every algorithm on it;
	// ParamsTitle heads them in 'locklab help scenario' (default
	// "backend NAME").
	Params      []algorithms.Param
	ParamsTitle string
	// Check checks what the backend's params mean together, after each
	// param passed its own check (a server named in one must exist by
	// another).
	Check func(s *Scenario, bad func(field, format string, args ...any))
	// Metrics names the figures its Backend.Metrics reports (at_most
	// bounds one of them).
	Metrics []string
	// Matrix gives the matrix's base scenario for an algorithm on this
	// backend, whose leases last ttl: its number of Redis nodes and its
	// params (nil: one unused Redis node, no params).
	Matrix func(info algorithms.Info, ttl time.Duration) (nodes int, params map[string]string)
	// MatrixFencing turns a matrix base scenario into its "+fencing" row
	// (nil: the backend has no fenced rows).
	MatrixFencing func(sc *Scenario)
	// MatrixBubbleRows: its algorithms that run in the bubble are matrix
	// rows all the same (their runs are short).
	MatrixBubbleRows bool
	// ServerRoles: its servers elect a leader, and a report draws each
	// one's role (leader, follower, not serving) from the election events
	// (reports/zkmechanism.go).
	ServerRoles bool
	// ClockIgnored says why a clock jump and a drift of one of its servers
	// change nothing (nil: they may); the run warns with it.
	ClockIgnored func(server string) (jump, drift string)
	// OwnWait: its algorithms wait for a held lock their own way and never
	// read the file's wait policy, so the matrix leaves it at the default.
	OwnWait bool
}

var backendInfos = map[string]BackendInfo{}

// RegisterBackend makes a backend available to algorithms whose
// Info.Backend is b.Name. Call it from an init function of the backend's
// own file.
func RegisterBackend(b BackendInfo) {
	if _, dup := backendInfos[b.Name]; dup || b.Name == "" {
		panic(fmt.Sprintf("scenarios: backend %q registered twice or without a name", b.Name))
	}
	backendInfos[b.Name] = b
}

// LookupBackend returns the descriptor of the backend called name.
func LookupBackend(name string) (BackendInfo, bool) {
	b, ok := backendInfos[name]
	return b, ok
}

// Backends lists the registered backends' names, sorted.
func Backends() []string {
	var out []string
	for n := range backendInfos {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// BackendOf returns the descriptor of the backend algorithm runs on (the
// zero BackendInfo for an unknown algorithm).
func BackendOf(algorithm string) BackendInfo {
	info, err := algorithms.Lookup(algorithm)
	if err != nil {
		return BackendInfo{}
	}
	return backendInfos[info.Backend]
}

// backendOf is the descriptor of info's backend (the zero one if none is
// registered under its name).
func backendOf(info algorithms.Info) BackendInfo { return backendInfos[info.Backend] }

// hostNames lists the hosts b builds for sc.
func (b BackendInfo) hostNames(sc *Scenario) []string {
	if b.Hosts == nil {
		return nil
	}
	return b.Hosts(sc)
}
