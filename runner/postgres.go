package runner

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/pglock" // registers the pg-* algorithms
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/dbnet"
	"github.com/locklab/locklab/sim/pgnode"
)

// The Postgres backend's run half: the servers, the pooler and the
// pgx connections built in the world, and its matrix setup; its params
// and hosts are scenarios/postgres.go's.
func init() {
	RegisterBackend(BackendInfo{
		Name:  pglock.Backend,
		Build: newPostgresBackend,
		// No Redis node; a session advisory lock lasts until the server's
		// keepalive gives up on a silent client (Linux: over two hours).
		// Keepalive at half the TTL, then three probes an eighth apart,
		// frees a crashed or cut-off holder's lock within the TTL, so the
		// liveness bound (2×TTL+1s) means the same as for the Redis locks.
		Matrix: func(_ algorithms.Info, ttl time.Duration) (int, map[string]string) {
			return 0, map[string]string{"keepalive_idle": (ttl / 2).String(), "keepalive_interval": (ttl / 8).String(), "keepalive_count": "3"}
		},
		// Fencing tokens from the fence row's version.
		MatrixFencing:    func(sc *scenarios.Scenario) { sc.Params[algorithms.ParamTokenSource] = "table" },
		MatrixBubbleRows: true, // pgx in the bubble: its runs are short
	})
}

// pgBackend is the backend of one run.
type pgBackend struct {
	w       *sim.World
	net     *dbnet.Net
	address string // what clients dial: "primary:5432" or "pgbouncer:6432"
	simple  bool   // the clients use the simple protocol (behind a pooler)
	direct  []string
	bouncer *pgnode.Bouncer
	// app is the service host whose one client all clients share
	// (shared_pool), and shared that client.
	app    *sim.Host
	shared *pglock.Client
	sc     *scenarios.Scenario
}

func newPostgresBackend(w *sim.World, sc *scenarios.Scenario) (Backend, error) {
	if !w.Bubble() {
		return nil, fmt.Errorf("backend %s runs the real pgx driver and needs the bubble runtime (Options.Bubble)", pglock.Backend)
	}
	n := dbnet.New(w, func() dbnet.Codec { return pgnode.NewCodec() })
	ka := keepaliveOf(sc)
	// A restart keeps the tables (the fence row), never the advisory
	// locks, which live in shared memory.
	postgres := func(prev dbnet.Service) dbnet.Service {
		s := pgnode.NewServer()
		if p, ok := prev.(*pgnode.Server); ok {
			s.SetFenceToken(p.FenceToken())
		}
		return s
	}
	n.AddServer("db1", ka, postgres)
	n.Alias("primary", "db1")
	if scenarios.PostgresStandby(sc) {
		n.AddServer("db2", ka, postgres)
	}
	b := &pgBackend{w: w, net: n, address: "primary:5432", sc: sc}
	b.direct = scenarios.ClientList(sc, "direct_clients")
	if mode := scenarios.PostgresPooler(sc); mode != "" {
		reset := "DISCARD ALL"
		if v, ok := sc.Params["server_reset_query"]; ok {
			reset = v
		}
		always, _ := strconv.ParseBool(sc.Params["server_reset_query_always"])
		bouncer := func(dbnet.Service) dbnet.Service {
			bc := &pgnode.Bouncer{
				Transaction:    mode == "transaction",
				PoolSize:       paramInt(sc, "pool_size", 20),
				ResetQuery:     reset,
				ResetAlways:    always,
				ServerLifetime: paramDuration(sc, "server_lifetime", time.Hour),
				Dial:           func() (c net.Conn, err error) { return n.Dial(n.Server("pgbouncer").Host, "primary") },
			}
			b.bouncer = bc
			return bc
		}
		n.AddServer("pgbouncer", ka, bouncer).Relay = true
		b.address, b.simple = "pgbouncer:6432", true
	}
	if on, _ := strconv.ParseBool(sc.Params["shared_pool"]); on {
		b.app = w.NewHost("app", nil)
	}
	return b, nil
}

// Connect hands client host h its access to the database: a pgx
// configuration dialling over the simulated network. Behind a pooler the
// client uses the simple protocol, as PgBouncer's users must before 1.21
// (a statement prepared on one server connection is unknown on the next).
func (b *pgBackend) Connect(h *sim.Host) any {
	if b.app != nil && !slices.Contains(b.direct, h.Name) {
		if b.shared == nil {
			b.shared = b.connect(b.app)
		}
		return b.shared
	}
	return b.connect(h)
}

func (b *pgBackend) connect(h *sim.Host) *pglock.Client {
	address, simple := b.address, b.simple
	if slices.Contains(b.direct, h.Name) {
		address, simple = "primary:5432", false
	}
	c := &pglock.Client{}
	c.Config = func() *pgx.ConnConfig {
		url := "postgres://" + h.Name + "@" + address + "/lab?sslmode=disable"
		if simple {
			url += "&default_query_exec_mode=simple_protocol"
		}
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			panic(fmt.Sprintf("postgres backend: %v", err)) // the URL is ours
		}
		cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) { return []string{host}, nil }
		cfg.DialFunc = b.net.DialFunc(h)
		return cfg
	}
	// The client's pgxpool, made on first use (outside the kernel) and
	// closed when the run ends, on a goroutine of its own: Close waits
	// for its connections, whose Terminate goes through the network.
	var mu sync.Mutex
	var pool *pgxpool.Pool
	c.Pool = func() (*pgxpool.Pool, error) {
		mu.Lock()
		defer mu.Unlock()
		if pool != nil {
			return pool, nil
		}
		cfg, err := pgxpool.ParseConfig("")
		if err != nil {
			return nil, err
		}
		cfg.ConnConfig = c.Config()
		cfg.MaxConns = int32(paramInt(b.sc, "pool_max_conns", 4))
		cfg.MaxConnIdleTime = paramDuration(b.sc, "pool_max_conn_idle_time", 30*time.Minute)
		cfg.HealthCheckPeriod = paramDuration(b.sc, "pool_health_check_period", time.Minute)
		pool, err = pgxpool.NewWithConfig(context.Background(), cfg)
		return pool, err
	}
	// The same through database/sql and pgx's stdlib driver.
	var db *sql.DB
	c.DB = func() (*sql.DB, error) {
		mu.Lock()
		defer mu.Unlock()
		if db == nil {
			db = stdlib.OpenDB(*c.Config())
			db.SetMaxOpenConns(paramInt(b.sc, "pool_max_conns", 4))
			db.SetConnMaxIdleTime(paramDuration(b.sc, "pool_max_conn_idle_time", 30*time.Minute))
		}
		return db, nil
	}
	b.w.OnRunEnd(func() {
		mu.Lock()
		p, d := pool, db
		mu.Unlock()
		for _, shut := range []func(){func() {
			if p != nil {
				p.Close()
			}
		}, func() {
			if d != nil {
				d.Close()
			}
		}} {
			done := make(chan struct{})
			b.w.WaitAtEnd(done)
			go func() {
				defer close(done)
				shut()
			}()
		}
	})
	return c
}

func (b *pgBackend) Hosts() []*sim.Host {
	var out []*sim.Host
	for _, s := range b.net.Servers() {
		out = append(out, s.Host)
	}
	if b.app != nil {
		out = append(out, b.app)
	}
	return out
}

// Servers are the database servers and the pooler, for node-crash (and
// failover, for the standby).
func (b *pgBackend) Servers() map[string]faults.Server {
	out := map[string]faults.Server{}
	for _, s := range b.net.Servers() {
		if s.Name == "db2" {
			out[s.Name] = pgStandby{pgServer{b.net, s.Name}}
			continue
		}
		out[s.Name] = pgServer{b.net, s.Name}
	}
	return out
}

type pgServer struct {
	n    *dbnet.Net
	name string
}

func (s pgServer) Crash()   { s.n.Crash(s.name) }
func (s pgServer) Restart() { s.n.Restart(s.name) }

// pgStandby is a standby a failover promotes: "primary" now leads to it.
// It has none of the primary's advisory locks (they are not replicated)
// and the fence row as replicated up to now.
type pgStandby struct{ pgServer }

// Primary reports whether the standby was promoted already: a failover
// of it then changes nothing (faults' inert).
func (s pgStandby) Primary() bool { return s.n.Route("primary") == s.name }

func (s pgStandby) Promote() error {
	if s.n.Route("primary") == s.name {
		return fmt.Errorf("%s is the primary already", s.name)
	}
	if old, ok := s.n.Server(s.n.Route("primary")).Service().(*pgnode.Server); ok {
		if srv, ok := s.n.Server(s.name).Service().(*pgnode.Server); ok {
			srv.SetFenceToken(old.FenceToken())
		}
	}
	s.n.Promote("primary", s.name)
	return nil
}

func (b *pgBackend) Metrics() []Metric {
	out := []Metric{{Name: "db_segments", Value: int64(b.net.Segments())}}
	if b.bouncer != nil {
		out = append(out, Metric{Name: "pooler_server_conns", Value: int64(b.bouncer.ServerConns)})
	}
	return out
}
