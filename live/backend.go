package live

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/mysqllock"
	"github.com/locklab/locklab/algorithms/pglock"
	"github.com/locklab/locklab/algorithms/zklock/gozk"
	"github.com/locklab/locklab/scenarios"
)

// backend is what a live run needs of one lock backend: its real servers,
// and connections to them for a client's lock, through the client's links.
type backend interface {
	// start starts the servers, each in a directory under root.
	start(root string, opt Options) error
	// hosts describes the servers, for the result.
	hosts() []scenarios.Host
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

// newBackend picks the live backend of the scenario's algorithm.
func newBackend(sc *scenarios.Scenario, info algorithms.Info) (backend, error) {
	switch info.Backend {
	case "redis":
		return &redisBackend{sc: sc, servers: map[string]*redisServer{}}, nil
	case gozk.Backend:
		timeout := 6 * time.Second // scenarios' default session timeout
		if v, ok := sc.Params["session_timeout"]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, fmt.Errorf("params.session_timeout: %v", err)
			}
			timeout = d
		}
		return &zkBackend{sc: sc, timeout: timeout}, nil
	case pglock.Backend:
		return &pgBackend{sc: sc}, nil
	case mysqllock.Backend:
		return &myBackend{sc: sc}, nil
	}
	return nil, &NotExpressible{Scenario: sc.ID, Reasons: []string{fmt.Sprintf("algorithm %s runs on the %s backend, which live mode does not start", sc.Algorithm, info.Backend)}}
}

// redisBackend is the scenario's Redis nodes as redis-server processes.
type redisBackend struct {
	sc      *scenarios.Scenario
	servers map[string]*redisServer
}

func (b *redisBackend) start(root string, _ Options) error {
	bin, err := RedisBinary()
	if err != nil {
		return err
	}
	for _, n := range b.sc.Nodes {
		s, err := startRedis(bin, root, n.Name)
		if err != nil {
			return err
		}
		b.servers[n.Name] = s
	}
	return nil
}

func (b *redisBackend) hosts() []scenarios.Host {
	var out []scenarios.Host
	for _, n := range b.sc.Nodes {
		out = append(out, scenarios.Host{Name: n.Name, Role: "redis-server (live)"})
	}
	return out
}

func (b *redisBackend) process(name string) process {
	if s, ok := b.servers[name]; ok {
		return s
	}
	return nil
}

func (b *redisBackend) close() {
	for _, s := range b.servers {
		s.close()
	}
}

// connect gives the client one go-redis client per node, each through its
// own link, and warms them: a simulated client's connections cost nothing
// to open, a real go-redis client dials and authenticates on its first
// command, so they are opened before the run's clock starts and a client
// that starts first also reaches the server first, as in the simulation.
func (b *redisBackend) connect(r *run, c *clientHost) (algorithms.Conns, error) {
	libraryRetries := b.sc.Clients.LibraryRetries
	if over := b.sc.Clients.Each[c.Name].LibraryRetries; over != nil {
		libraryRetries = *over
	}
	// The scenario's clients.timeout when it sets one (a delayed grant
	// waits 30 s for its reply), else the live default (Options.Timeout).
	wait := r.opt.Timeout
	if t := b.sc.Clients.Timeout.D(); t > 0 {
		wait = t
	}
	var connect func() algorithms.Conns
	connect = func() algorithms.Conns {
		conns := algorithms.Conns{Fresh: connect}
		for _, n := range b.sc.Nodes {
			l := &link{client: c, server: b.servers[n.Name], fabric: r.fabric, wait: wait, count: func() { r.messages.Add(1) }, inflight: &r.inflight}
			cl := l.newClient(libraryRetries)
			if n.Role == "tokens" {
				conns.Tokens = cl
			} else {
				conns.Redis = append(conns.Redis, cl)
			}
		}
		return conns
	}
	conns := connect()
	for _, cl := range append(conns.Redis, conns.Tokens) {
		if cl == nil {
			continue
		}
		if err := cl.Ping(context.Background()).Err(); err != nil {
			return conns, err
		}
	}
	return conns, nil
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
	var need []func() error
	switch info.Backend {
	case "redis":
		need = append(need, func() error { _, err := RedisBinary(); return err })
	case gozk.Backend:
		need = append(need, zkInstalled)
	case pglock.Backend:
		need = append(need, func() error { _, err := pgBinary("initdb"); return err })
		if p := sc.Params["pooler"]; p == "session" || p == "transaction" {
			need = append(need, func() error { _, err := pgbouncerBinary(); return err })
		}
	case mysqllock.Backend:
		need = append(need, func() error { _, _, err := mariadbBinaries(); return err })
	}
	for _, n := range need {
		if err := n(); err != nil {
			return &MissingServer{Msg: err.Error()}
		}
	}
	return nil
}
