package live

import (
	"fmt"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// backend is what a live run needs of one lock backend: its real servers,
// and connections to them for a client's lock, through the client's links.
type backend interface {
	// start starts the servers, each in a directory under root.
	start(root string, opt Options) error
	// hosts describes the servers, for the result.
	hosts() []runner.Host
	// process is the server a node-crash fault names, or nil.
	process(name string) process
	// connect opens client c's connections.
	connect(r *run, c *clientHost) (algorithms.Conns, error)
	// close stops every server and removes its directory.
	close()
}

// process is one real server process that faults can kill and restart.
type process interface {
	kill()
	start() error
}

// MissingServer is the answer when a server program a live run needs is
// not installed: it says which, and the project's script that installs it.
type MissingServer struct{ Msg string }

func (e *MissingServer) Error() string { return e.Msg }

// Installed checks, without starting anything, that the programs sc's live
// run needs are on this machine.
func Installed(sc *scenarios.Scenario) error {
	info, err := algorithms.Lookup(sc.Algorithm)
	if err != nil {
		return err
	}
	lb, ok := liveBackends[info.Backend]
	if !ok {
		return nil // not expressible: Run says why, naming the backend
	}
	for _, n := range lb.installed(sc) {
		if err := n(); err != nil {
			return &MissingServer{Msg: err.Error()}
		}
	}
	return nil
}

// liveBackend is live mode's side of one backend, registered by the
// backend's own file of this package (redis.go, zookeeper.go, postgres.go,
// mysql.go) as the simulation's side is by its descriptor
// (scenarios/backend.go). A backend with none is not expressible live.
type liveBackend struct {
	// start makes the backend for sc (its servers start later, in start).
	new func(sc *scenarios.Scenario) (backend, error)
	// expressible names every part of sc this backend cannot make live.
	expressible func(sc *scenarios.Scenario) []string
	// installed lists the checks that the programs sc needs are installed.
	installed func(sc *scenarios.Scenario) []func() error
	// crashable says whether f.Target (a node-crash fault's) is a server
	// of this backend that live mode can kill and restart; why is "" when
	// it can, or what stops it (a restart it cannot make yet).
	crashable func(sc *scenarios.Scenario, f faults.Fault) (mine bool, why string)
}

var liveBackends = map[string]liveBackend{}

// registerLive declares the live side of the backend called name (an
// algorithms.Info.Backend); call it from an init function.
func registerLive(name string, b liveBackend) { liveBackends[name] = b }

// newBackend picks the live backend of the scenario's algorithm.
func newBackend(sc *scenarios.Scenario, info algorithms.Info) (backend, error) {
	lb, ok := liveBackends[info.Backend]
	if !ok {
		return nil, &NotExpressible{Scenario: sc.ID, Reasons: []string{fmt.Sprintf("algorithm %s runs on the %s backend, which live mode does not start", sc.Algorithm, info.Backend)}}
	}
	return lb.new(sc)
}
