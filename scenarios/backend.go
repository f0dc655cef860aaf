package scenarios

import (
	"fmt"
	"sort"

	"github.com/locklab/locklab/algorithms"
)

// BackendInfo is what the file check, the help text, reports and the
// command line know of one backend, declared once in the backend's own
// file (redis.go, ensemble.go, postgres.go, …) by RegisterBackend, as
// algorithms.Register declares an algorithm. How to build it in a world,
// and its matrix setup, are its runtime half, declared in the same way in
// package runner (runner.BackendInfo, runner/redis.go, runner/ensemble.go,
// …). Code outside those files asks the descriptors (backendOf) and never
// compares the backend's name: a new backend is its package, its two
// descriptors and its algorithms (docs/architecture.md, "Add a backend").
type BackendInfo struct {
	// Name is the algorithms' Info.Backend.
	Name string
	// RedisNodes says the locks live on the file's Redis nodes (nodes:):
	// the runner builds them, MinNodes counts their lock nodes, and a
	// client's lease deadline is read on its own clock. Only Redis.
	RedisNodes bool
	// Hosts lists the host names the runtime half's Build will create
	// for a scenario, so fault schedules can name them before the run
	// (nil: none).
	Hosts func(sc *Scenario) []string
	// Crashable: Build's result is a runner.ServerBackend, and its hosts
	// are valid node-crash targets (faults.Names.Servers).
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
	// Metrics names the figures its runner.Backend's Metrics reports
	// (at_most bounds one of them).
	Metrics []string
	// ServerRoles: its servers elect a leader, and a report draws each
	// one's role (leader, follower, not serving) from the election events
	// (reports/zkmechanism.go).
	ServerRoles bool
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
