package locktest

// Database locks: a lock built on the database a service already runs —
// a Postgres advisory lock through pgx or database/sql, a MySQL named lock
// (GET_LOCK) through database/sql — under the same fault classes,
// expectations, failfiles and reports as a Redis lock. The user's
// constructor receives a handle of the real driver, unmodified, connected
// over the simulated network (sim/dbnet) to the simulated servers of
// sim/pgnode or sim/mysqlnode, inside the run's bubble:
//
//	locktest.RunPostgres(t, func(pool *pgxpool.Pool) locktest.Lock { ... }, opt)
//	locktest.RunSQL(t, "mysql", func(db *sql.DB) locktest.Lock { ... }, opt)
//	locktest.RunSQL(t, "pgx", func(db *sql.DB) locktest.Lock { ... }, opt)
//	locktest.RunMySQLDSN(t, func(dsn string) locktest.Lock { ... }, opt)
//
// By default the clients are the workers of one service sharing one pool
// (params shared_pool: true), as a service's goroutines share its *sql.DB
// or *pgxpool.Pool: that is where the classic pool bug lives (the lock
// taken on one pooled connection, the unlock sent on another; see
// algorithms/mysqllock and algorithms/pglock). A lock that pins one
// connection from lock to unlock (*sql.Conn, pool.Acquire) or holds a
// transaction lock does not have it.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/mysqllock"
	"github.com/locklab/locklab/algorithms/pglock"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
)

// Database is the simulated database of RunPostgres and RunSQL.
type Database struct {
	// Params are the database backend's params, as in a scenario file
	// (README, "Database locks"): for Postgres pooler (none, session or
	// transaction: PgBouncer's pool_mode), server_reset_query,
	// server_reset_query_always, keepalive_idle, keepalive_interval,
	// keepalive_count, standby, direct_clients; for MySQL nodes (2: a
	// multi-primary cluster whose named locks are node-local), route,
	// wait_timeout, keepalive_*, own_pool. Both take shared_pool (default
	// true: one pool for all clients). Unknown keys and bad values fail
	// the test with a did-you-mean.
	Params map[string]string
	// PoolSize is the largest number of connections of a *pgxpool.Pool
	// (MaxConns; default 10: pgxpool's own default depends on the
	// machine's CPUs, which would make a run depend on the machine).
	PoolSize int
}

// PostgresFactory builds one client's lock on its pgx pool, connected to
// the simulated Postgres server (or its pooler, params.pooler). It is
// called once per client per run, inside the run, when the client first
// locks; with shared_pool (the default) every client gets the same pool.
type PostgresFactory func(pool *pgxpool.Pool) Lock

// SQLFactory builds one client's lock on its database/sql pool, connected
// to the simulated server. It is called as PostgresFactory is.
type SQLFactory func(db *sql.DB) Lock

// The drivers RunSQL accepts.
const (
	DriverPgx   = "pgx"   // github.com/jackc/pgx/v5/stdlib, to Postgres
	DriverMySQL = "mysql" // github.com/go-sql-driver/mysql, to MariaDB/MySQL
)

// The hidden algorithms a database lock's runs (and failfiles) name: a
// user's lock on the Postgres or the MySQL backend, as algorithms.Custom
// is one on Redis.
const (
	customPostgres = "custom-postgres"
	customMySQL    = "custom-mysql"
)

func init() {
	for _, a := range []struct{ name, backend string }{{customPostgres, pglock.Backend}, {customMySQL, mysqllock.Backend}} {
		algorithms.Register(algorithms.Info{
			Name:    a.name,
			Summary: "your own lock on the " + a.backend + " backend, supplied by a factory in Go (locktest)",
			Backend: a.backend, Bubble: true, Hidden: true,
			New: func(algorithms.Params, algorithms.Conns) (algorithms.Lock, error) {
				return nil, errors.New("a custom database lock is built by a factory in Go; use package locktest")
			},
		})
	}
}

// RunPostgres tests a lock built on a *pgxpool.Pool as Run tests a Redis
// lock: one subtest per fault class, each class judged against
// opt.Expect, counterexamples shrunk, saved as failfiles and replayed.
func RunPostgres(t *testing.T, f PostgresFactory, opt Options) {
	t.Helper()
	if f == nil {
		t.Fatal("locktest: RunPostgres: the factory is nil")
	}
	runDatabase(t, customPostgres, dbBuilder{open: func(c any, o Database) (any, func(), error) {
		client, ok := c.(*pglock.Client)
		if !ok {
			return nil, nil, fmt.Errorf("locktest: RunPostgres: expected a Postgres client, got %T", c)
		}
		pc, err := pgxpool.ParseConfig("")
		if err != nil {
			return nil, nil, err
		}
		pc.ConnConfig = client.Config()
		pc.MaxConns = int32(o.PoolSize)
		pool, err := pgxpool.NewWithConfig(context.Background(), pc)
		if err != nil {
			return nil, nil, err
		}
		return pool, pool.Close, nil
	}, build: func(h any) Lock { return f(h.(*pgxpool.Pool)) }}, opt)
}

// RunSQL tests a lock built on a *sql.DB of driver (DriverPgx, to
// Postgres; DriverMySQL, to MySQL; DriverSQLServer, to SQL Server) as Run
// tests a Redis lock.
func RunSQL(t *testing.T, driver string, f SQLFactory, opt Options) {
	t.Helper()
	if f == nil {
		t.Fatal("locktest: RunSQL: the factory is nil")
	}
	build := func(h any) Lock { return f(h.(*sql.DB)) }
	switch driver {
	case DriverPgx:
		runDatabase(t, customPostgres, dbBuilder{open: func(c any, _ Database) (any, func(), error) {
			client, ok := c.(*pglock.Client)
			if !ok {
				return nil, nil, fmt.Errorf("locktest: RunSQL: expected a Postgres client, got %T", c)
			}
			db := stdlib.OpenDB(*client.Config())
			return db, func() { _ = db.Close() }, nil
		}, build: build}, opt)
	case DriverMySQL:
		runDatabase(t, customMySQL, dbBuilder{open: func(c any, _ Database) (any, func(), error) {
			client, ok := c.(*mysqllock.Client)
			if !ok {
				return nil, nil, fmt.Errorf("locktest: RunSQL: expected a MySQL client, got %T", c)
			}
			// The backend closes its pools when the run ends.
			return client.DB, nil, nil
		}, build: build}, opt)
	case DriverSQLServer:
		runDatabase(t, customMSSQL, sqlServerBuilder(build), opt) // sqlserver.go
	default:
		msg := fmt.Sprintf("locktest: RunSQL: unknown driver %q; expected %q, %q or %q", driver, DriverPgx, DriverMySQL, DriverSQLServer)
		if m := scenarios.DidYouMean(driver, []string{DriverPgx, DriverMySQL, DriverSQLServer}); m != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", m)
		}
		t.Fatal(msg)
	}
}

// DSNFactory builds one client's lock from a MySQL DSN, for a lock (or a
// lock library) that opens its own pool: sql.Open("mysql", dsn). The DSN
// names a network registered with go-sql-driver/mysql for this client
// (mysql.RegisterDialContext) that dials the simulated server. A lock
// that opens a pool must close it: make the Lock an io.Closer, which the
// harness calls when the client ends.
type DSNFactory func(dsn string) Lock

// dsnNetworks numbers the networks registered for DSNs, process-wide
// (go-sql-driver/mysql's registry is).
var dsnNetworks atomic.Uint64

// RunMySQLDSN tests a lock built from a MySQL DSN as RunSQL tests one
// built on a *sql.DB.
func RunMySQLDSN(t *testing.T, f DSNFactory, opt Options) {
	t.Helper()
	if f == nil {
		t.Fatal("locktest: RunMySQLDSN: the factory is nil")
	}
	runDatabase(t, customMySQL, dbBuilder{open: func(c any, _ Database) (any, func(), error) {
		client, ok := c.(*mysqllock.Client)
		if !ok || client.Config == nil {
			return nil, nil, fmt.Errorf("locktest: RunMySQLDSN: expected a MySQL client with its configuration, got %T", c)
		}
		cfg := client.Config.Clone()
		dial := cfg.DialFunc
		network := fmt.Sprintf("locklab%d", dsnNetworks.Add(1))
		mysql.RegisterDialContext(network, func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		})
		cfg.Net, cfg.DialFunc = network, nil
		return cfg.FormatDSN(), func() { mysql.DeregisterDialContext(network) }, nil
	}, build: func(h any) Lock { return f(h.(string)) }}, opt)
}

// runDatabase is Run for a database lock on the backend of algorithm.
func runDatabase(t *testing.T, algorithm string, b dbBuilder, opt Options) {
	t.Helper()
	if err := opt.refuseForeign(routeDatabase); err != nil {
		t.Fatal(err)
	}
	// Stall draws Redis faults (EVALSHA and DEL): a database's classes
	// are the generator's, whose crash and restart classes take the
	// database's servers down, and failover to a Postgres standby.
	standby := algorithm == customPostgres && opt.Database.Params["standby"] == "true"
	for _, c := range opt.Classes {
		switch {
		case c == Stall:
			t.Fatalf("locktest: Options.Classes: %s is a class of Redis locks; a database's classes are %v and, with a Postgres standby, %s", c, faults.Classes(), Failover)
		case c == Failover && !standby:
			t.Fatalf(`locktest: Options.Classes: %s needs a Postgres standby to promote: Options.Database.Params{"standby": "true"}`, c)
		}
	}
	if len(opt.Classes) == 0 {
		opt.Classes = faults.Classes()
		if standby {
			opt.Classes = append(opt.Classes, Failover)
		}
	}
	if standby {
		opt.failover = dbFailoverRun
	}
	if err := opt.defaults(); err != nil {
		t.Fatal(err)
	}
	if opt.Nodes > 1 || opt.Replicas > 0 || opt.Persistence != "" {
		t.Fatal("locktest: Options.Nodes, Replicas and Persistence describe Redis nodes; for a database use Options.Database.Params (nodes, standby)")
	}
	if err := checkSerial(t); err != nil {
		t.Fatal(err)
	}
	// The user's test called RunPostgres or RunSQL, which called this.
	if _, file, line, ok := runtime.Caller(2); ok {
		opt.caller = fmt.Sprintf("%s:%d", filepath.Base(file), line)
	}
	if *flagSeed != 0 {
		opt.Seed = *flagSeed
	}
	if *flagRuns > 0 {
		opt.Runs = *flagRuns
	}
	if opt.Database.PoolSize == 0 {
		opt.Database.PoolSize = 10
	}
	if opt.Database.PoolSize < 0 {
		t.Fatalf("locktest: Options.Database.PoolSize: expected a number >= 1, got %d", opt.Database.PoolSize)
	}
	base, err := opt.dbBase(algorithm)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	b.opt = opt.Database
	for _, c := range opt.Classes {
		if err := runSubtest(t, string(c), func(t *testing.T) { runClass(t, b, opt, base, c) }); err != nil {
			t.Fatal(err)
		}
	}
}

// dbFailoverRun draws run i of a database's failover class, as Patroni
// fails over: the primary db1 dies for good while clients are busy, and
// the standby db2 — which has none of db1's advisory locks, they are not
// replicated — is promoted a little later; "primary" then leads to it.
func dbFailoverRun(base *scenarios.Scenario, opt Options, seed uint64, i int) *scenarios.Scenario {
	h := fnv.New64a()
	fmt.Fprintf(h, "locktest/db-failover/%d", seed)
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(i)))
	sc := base.Clone()
	sc.ID = fmt.Sprintf("locktest-failover-%d-%d", seed, i)
	if !opt.keepWorkload() {
		sc.Clients.Count = 2 + rng.IntN(4)
		hi := time.Duration(float64(opt.TTL) * (0.05 + 0.8*rng.Float64())).Round(time.Millisecond)
		sc.Clients.Work, _ = scenarios.ParseRange(fmt.Sprintf("%v..%v", hi/2, hi))
	}
	crash := time.Duration(100+rng.IntN(2900)) * time.Millisecond
	promote := crash + time.Duration(rng.IntN(1000))*time.Millisecond
	at := func(d time.Duration) *faults.Duration { v := faults.Duration(d); return &v }
	sc.Faults = faults.Schedule{
		{Kind: faults.NodeCrash, Target: "db1", At: at(crash)},
		{Kind: faults.Failover, Target: "db2", At: at(promote)},
	}
	sc.Seed = rng.Uint64()>>1 | 1
	return sc
}

// dbBase is the setup every run of a database lock starts from: no Redis
// node, the database's servers, and the server's TCP keepalive scaled to
// the TTL, as the matrix does for the Postgres advisory locks: idle at
// half the TTL, then three probes an eighth apart, so a crashed or cut-off
// holder's session ends — and its lock is freed — within the TTL, and the
// liveness bound (2×TTL+1s) means what it means for a Redis lock.
func (o *Options) dbBase(algorithm string) (*scenarios.Scenario, error) {
	sc, err := o.base()
	if err != nil {
		return nil, err
	}
	sc.Algorithm = algorithm
	sc.Nodes = nil
	if algorithm == customEtcd {
		// An etcd lock's lease is its session's TTL, kept alive by the
		// client: nothing to scale (etcd.go).
		sc.Params = etcdParams(o)
		return sc, sc.Validate()
	}
	sc.Params = map[string]string{
		"shared_pool":        "true",
		"keepalive_idle":     (o.TTL / 2).String(),
		"keepalive_interval": (o.TTL / 8).String(),
		"keepalive_count":    "3",
	}
	maps.Copy(sc.Params, o.Database.Params)
	return sc, sc.Validate()
}
