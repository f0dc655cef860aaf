package live

import (
	"context"
	"fmt"
	"slices"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// The Redis backend live: the scenario's nodes as redis-server processes
// (redis_server.go), without replicas.
func init() {
	registerLive(algorithms.Backend, liveBackend{
		new: func(sc *scenarios.Scenario) (backend, error) {
			return &redisBackend{sc: sc, servers: map[string]*redisServer{}}, nil
		},
		expressible: redisExpressible,
		installed: func(*scenarios.Scenario) []func() error {
			return []func() error{func() error { _, err := RedisBinary(); return err }}
		},
		crashable: redisCrashable,
	})
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

func (b *redisBackend) hosts() []runner.Host {
	var out []runner.Host
	for _, n := range b.sc.Nodes {
		out = append(out, runner.Host{Name: n.Name, Role: "redis-server (live)"})
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

// redisExpressible checks a Redis scenario's nodes.
func redisExpressible(sc *scenarios.Scenario) []string {
	var why []string
	for _, n := range sc.Nodes {
		if n.Replica != "" {
			why = append(why, fmt.Sprintf("node %s replicates from %s: replication between live servers is not wired yet", n.Name, n.Replica))
		}
		if n.Offset != 0 || n.PPM != 0 {
			why = append(why, fmt.Sprintf("node %s has a clock offset or rate: a live redis-server runs on the host's clock (libfaketime cannot be loaded into redis-server, see docs/live.md)", n.Name))
		}
		if n.MinReplicasToWrite > 0 {
			why = append(why, fmt.Sprintf("node %s sets min_replicas_to_write, which needs replicas", n.Name))
		}
	}
	return why
}

// redisCrashable: any of the scenario's Redis nodes crashes live (SIGKILL)
// and restarts, empty: a restart that keeps an append-only file is not
// wired yet.
func redisCrashable(sc *scenarios.Scenario, f faults.Fault) (bool, string) {
	if !slices.ContainsFunc(sc.Nodes, func(n scenarios.Node) bool { return n.Name == f.Target }) {
		return false, ""
	}
	if f.Persistence != "" && f.Persistence != "none" {
		return true, "restart with persistence " + f.Persistence + " is not wired yet (a live node restarts empty)"
	}
	return true, ""
}
