package locktest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/locklab/locklab/examples/renewal"
	"github.com/locklab/locklab/faults"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var updateTable = flag.Bool("locktest.update-table", false, "rewrite the library × fault table in README.md")

// renewing keeps a lock with a goroutine of its own that extends it every
// period, as Redisson's watchdog and most hand-written renewals do, and
// reports the loss when an extension fails.
type renewing struct {
	lock, extend, unlock func(ctx context.Context) error
	period               time.Duration
	stop, lost           chan struct{}
	wg                   sync.WaitGroup
}

func (r *renewing) Lock(ctx context.Context) error {
	if err := r.lock(ctx); err != nil {
		return err
	}
	r.stop, r.lost = make(chan struct{}), make(chan struct{})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		tick := time.NewTicker(r.period)
		defer tick.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if r.extend(ctx) != nil {
					close(r.lost)
					return
				}
			}
		}
	}()
	return nil
}

func (r *renewing) Lost() <-chan struct{} { return r.lost }

func (r *renewing) Unlock(ctx context.Context) error {
	close(r.stop)
	r.wg.Wait()
	return r.unlock(ctx)
}

type tableRow struct {
	name, what string
	factory    Factory
	opt        Options
	// run, when set, runs the row instead of Run(t, factory, opt): a
	// database lock goes through RunPostgres or RunSQL, and takes only the
	// generator's classes (stall draws Redis commands), so its stall cell
	// reads n/a.
	run func(t *testing.T, opt Options)
}

// classes are the fault classes the row runs.
func (r tableRow) classes() []Class {
	if r.run != nil {
		return faults.Classes()
	}
	return tableClasses
}

var tableClasses = append(faults.Classes(), Stall)

func tableRows() []tableRow {
	redsyncOne := func(opts ...redsync.Option) Factory {
		return func(clients []*redis.Client) Lock {
			m := redsync.New(goredis.NewPool(clients[0])).NewMutex("orders", opts...)
			return Funcs{
				LockFunc:   m.LockContext,
				UnlockFunc: func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err },
			}
		}
	}
	redsyncExtend := func(clients []*redis.Client) Lock {
		m := redsync.New(goredis.NewPool(clients[0])).NewMutex("orders", redsync.WithExpiry(2*time.Second))
		return &renewing{
			lock:   m.LockContext,
			extend: func(ctx context.Context) error { _, err := m.ExtendContext(ctx); return err },
			unlock: func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err },
			period: 2 * time.Second / 3,
		}
	}
	redislockObtain := func(clients []*redis.Client) Lock {
		c := redislock.New(clients[0])
		var held *redislock.Lock
		return Funcs{
			LockFunc: func(ctx context.Context) (err error) {
				held, err = c.Obtain(ctx, "orders", 2*time.Second, &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)})
				return err
			},
			UnlockFunc: func(ctx context.Context) error { return held.Release(ctx) },
		}
	}
	redislockRefresh := func(clients []*redis.Client) Lock {
		c := redislock.New(clients[0])
		var held *redislock.Lock
		return &renewing{
			lock: func(ctx context.Context) (err error) {
				held, err = c.Obtain(ctx, "orders", 2*time.Second, &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)})
				return err
			},
			extend: func(ctx context.Context) error { return held.Refresh(ctx, 2*time.Second, nil) },
			unlock: func(ctx context.Context) error { return held.Release(ctx) },
			period: 2 * time.Second / 3,
		}
	}
	return []tableRow{
		{"redsync-1", "redsync v4.18.1, one node, default options (8s expiry, 32 tries)", redsyncOne(), Options{TTL: 8 * time.Second}, nil},
		{"redsync-redlock-5", "redsync v4.18.1, Redlock over 5 nodes, default options", redlock, Options{TTL: 8 * time.Second, Nodes: 5}, nil},
		{"redsync-extend", "redsync v4.18.1, 2s expiry, Extend every 667ms from a goroutine; work up to 3s", redsyncExtend, Options{TTL: 2 * time.Second, Renews: true, Work: 3 * time.Second}, nil},
		{"redislock", "bsm/redislock v0.9.4, Obtain with LinearBackoff(100ms), 2s TTL", redislockObtain, Options{TTL: 2 * time.Second}, nil},
		{"redislock-refresh", "bsm/redislock v0.9.4, Refresh every 667ms from a goroutine; work up to 3s", redislockRefresh, Options{TTL: 2 * time.Second, Renews: true, Work: 3 * time.Second}, nil},
		{"renewal", "examples/renewal: SET NX PX, watchdog every TTL/3 that reports a lost lease; work up to 3s", func(c []*redis.Client) Lock { return renewal.New(c[0], "orders", 2*time.Second) }, Options{TTL: 2 * time.Second, Renews: true, Work: 3 * time.Second}, nil},
		{"renewal-retake", "examples/renewal with redis-semaphore's refresh, which re-SETs an expired key", func(c []*redis.Client) Lock { return renewal.NewRetaking(c[0], "orders", 2*time.Second) }, Options{TTL: 2 * time.Second, Renews: true, Work: 3 * time.Second}, nil},
		// Database locks as services take them, through the real drivers
		// on one pool shared by the service's workers (database_test.go):
		// the session lock kept on one connection from lock to unlock, and
		// the classic pool bug, lock and unlock each on whichever pooled
		// connection is free (issue 22).
		{name: "pgx-session-pinned", what: "pgx v5 pgxpool, pg_try_advisory_lock/pg_advisory_unlock on one acquired *pgxpool.Conn", opt: Options{TTL: 2 * time.Second},
			run: func(t *testing.T, opt Options) { RunPostgres(t, pinnedAdvisoryLock, opt) }},
		{name: "pgx-session-pool", what: "pgx v5 pgxpool, pg_try_advisory_lock/pg_advisory_unlock each through the pool", opt: Options{TTL: 2 * time.Second},
			run: func(t *testing.T, opt Options) { RunPostgres(t, poolAdvisoryLock, opt) }},
		{name: "mysql-get-lock-pinned", what: "go-sql-driver/mysql, GET_LOCK/RELEASE_LOCK on one *sql.Conn", opt: Options{TTL: 2 * time.Second},
			run: func(t *testing.T, opt Options) { RunSQL(t, DriverMySQL, getLockPinned, opt) }},
		{name: "mysql-get-lock-pool", what: "go-sql-driver/mysql, GET_LOCK/RELEASE_LOCK each through the *sql.DB", opt: Options{TTL: 2 * time.Second},
			run: func(t *testing.T, opt Options) { RunSQL(t, DriverMySQL, getLockPool, opt) }},
		// SQL Server's application lock through go-mssqldb (issue 35): the
		// Session-owned lock on a pinned *sql.Conn, and through the pool,
		// where the next goroutine's call resets the connection
		// (sqlserver_test.go).
		{name: "mssql-applock-pinned", what: "go-mssqldb v1.9.3, sp_getapplock/sp_releaseapplock (owner Session, timeout 0) on one *sql.Conn", opt: Options{TTL: 2 * time.Second},
			run: func(t *testing.T, opt Options) { RunSQL(t, DriverSQLServer, appLockPinned, opt) }},
		{name: "mssql-applock-pool", what: "go-mssqldb v1.9.3, sp_getapplock/sp_releaseapplock (owner Session, timeout 0) each through the *sql.DB", opt: Options{TTL: 2 * time.Second},
			run: func(t *testing.T, opt Options) { RunSQL(t, DriverSQLServer, appLockPool, opt) }},
		// etcd's concurrency package through the real clientv3 on the
		// simulated cluster (issue 37, etcd_test.go).
		{name: "etcd-mutex", what: "etcd clientv3 v3.7.3 concurrency.Mutex, 2s session, a new session once the old one is done", opt: Options{TTL: 2 * time.Second},
			run: func(t *testing.T, opt Options) {
				RunEtcd(t, func(cli *clientv3.Client) Lock { return &etcdMutex{cli: cli} }, opt)
			}},
		{name: "etcd-election", what: "etcd clientv3 v3.7.3 concurrency.Election, Campaign/Resign as a lock, 2s session", opt: Options{TTL: 2 * time.Second},
			run: func(t *testing.T, opt Options) {
				RunEtcd(t, func(cli *clientv3.Client) Lock { return &etcdElection{cli: cli} }, opt)
			}},
		{name: "zk-newlock", what: "go-zookeeper v1.0.4 zk.NewLock, 3-server ensemble, 4s session", opt: Options{TTL: 4 * time.Second},
			run: func(t *testing.T, opt Options) { RunZooKeeper(t, zkNewLock, opt) }},
		{name: "gozk-queue", what: "the project's queue recipe (algorithms/zklock/gozk NewQueue: protected create, guaranteed delete), 4s session", opt: Options{TTL: 4 * time.Second},
			run: func(t *testing.T, opt Options) { RunZooKeeper(t, gozkQueue, opt) }},
		{name: "zk-persistent-node", what: "a broken hand-written recipe: Create without FlagEphemeral, Delete to unlock, 4s session", opt: Options{TTL: 4 * time.Second},
			run: func(t *testing.T, opt Options) { RunZooKeeper(t, persistentNodeLock, opt) }},
	}
}

const (
	tableBegin = "<!-- locktest-table:begin (generated by TestLibraryTable; go test ./locktest -run TestLibraryTable -locktest.update-table) -->"
	tableEnd   = "<!-- locktest-table:end -->"
)

// TestLibraryTable runs every library row under every fault class and
// checks the README's table against what comes out: a changed verdict
// fails the test (rewrite the table with -locktest.update-table).
func TestLibraryTable(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("the library table runs every library under every fault class; it runs without -short and -race (TestBubbleDeterministicRedlock covers -race)")
	}
	got := map[string]map[Class]finding{}
	var mu sync.Mutex
	observe = func(t *testing.T, class Class, f finding) {
		parts := strings.Split(t.Name(), "/")
		mu.Lock()
		defer mu.Unlock()
		row := parts[len(parts)-2]
		if got[row] == nil {
			got[row] = map[Class]finding{}
		}
		got[row][class] = f
	}
	defer func() { observe = nil }()
	rows := tableRows()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			opt := r.opt
			opt.Runs, opt.ShrinkRuns = 30, 40
			opt.Expect = Expect{}
			for _, c := range r.classes() {
				opt.Expect[c] = Any
			}
			if r.run != nil {
				r.run(t, opt)
				return
			}
			Run(t, r.factory, opt)
		})
	}
	if t.Failed() {
		return
	}
	for _, r := range rows {
		if len(got[r.name]) != len(r.classes()) || *flagReplay != "" {
			t.Logf("only part of the table ran (-run or -locktest.replay): README.md not compared")
			return
		}
	}
	table := renderTable(rows, got)
	readme := filepath.Join("..", "README.md")
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, tableBegin), strings.Index(text, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the table markers %q … %q", tableBegin, tableEnd)
	}
	current := text[i+len(tableBegin) : j]
	if current == table {
		return
	}
	if *updateTable {
		if err := os.WriteFile(readme, []byte(text[:i+len(tableBegin)]+table+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("README.md's table rewritten")
		return
	}
	t.Errorf("a verdict changed; README.md's table should read (rewrite it with -locktest.update-table):\n%s", table)
}

func renderTable(rows []tableRow, got map[string]map[Class]finding) string {
	var b strings.Builder
	b.WriteString("\n| lock | " + strings.Join(slicesMap(tableClasses, func(c Class) string { return string(c) }), " | ") + " |\n")
	b.WriteString("| --- |" + strings.Repeat(" --- |", len(tableClasses)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s`: %s |", r.name, r.what)
		for _, c := range tableClasses {
			f, ran := got[r.name][c]
			if !ran {
				b.WriteString(" n/a |")
				continue
			}
			if f.prop == Safe {
				// Not "safe": 30 runs that found nothing prove nothing
				// (redsync's Redlock under restart needs up to 383 runs,
				// BENCHMARKS.md "Time to find on the bubble path").
				b.WriteString(" none in 30 |")
				continue
			}
			var short []string
			if f.prop&MutualExclusion != 0 {
				short = append(short, "ME")
			}
			if f.prop&Resource != 0 {
				short = append(short, "R")
			}
			if f.prop&Liveness != 0 {
				short = append(short, "L")
			}
			fmt.Fprintf(&b, " [%s](locktest/%s) |", strings.Join(short, "+"), filepath.ToSlash(f.file))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nME: mutual exclusion violated, R: resource (lost update), L: liveness; none in 30: no violation in the cell's 30 runs (seed 1), which is not a proof of safety (Redlock's restart failure, for one, often needs more: BENCHMARKS.md, \"Time to find on the bubble path\"); n/a: a class the lock does not take (stall draws Redis commands). Each violated cell links to its counterexample; replay it with\n`go test ./locktest -run '^TestLibraryTable$/^ROW$/^CLASS$' -locktest.replay=testdata/locktest/TestLibraryTable/ROW/CLASS.yaml -v`.\n")
	return b.String()
}

func slicesMap[T, U any](in []T, f func(T) U) []U {
	out := make([]U, 0, len(in))
	for _, v := range in {
		out = append(out, f(v))
	}
	return out
}
