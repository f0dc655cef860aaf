package locktest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/locklab/locklab/faults"
)

// advisoryKey is the lock's bigint key, as a user's code would pick it.
const advisoryKey = 4242

// pinnedAdvisoryLock is a correct Postgres session lock on a pgx pool: it
// takes one connection out of the pool (pool.Acquire) and keeps it from
// pg_try_advisory_lock to pg_advisory_unlock, so the unlock runs on the
// session that holds the lock.
func pinnedAdvisoryLock(pool *pgxpool.Pool) Lock {
	var conn *pgxpool.Conn
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			c, err := pool.Acquire(ctx)
			if err != nil {
				return err
			}
			var ok bool
			if err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", advisoryKey).Scan(&ok); err != nil {
				c.Release()
				return err
			}
			if !ok {
				c.Release()
				return errBusy
			}
			conn = c
			return nil
		},
		UnlockFunc: func(ctx context.Context) error {
			c := conn
			conn = nil
			if c == nil {
				return errors.New("not held")
			}
			defer c.Release()
			var ok bool
			if err := c.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", advisoryKey).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("pg_advisory_unlock(%d) returned false", advisoryKey)
			}
			return nil
		},
	}
}

// poolAdvisoryLock is the classic pool bug: pg_try_advisory_lock and
// pg_advisory_unlock each run on whichever pooled connection is free.
func poolAdvisoryLock(pool *pgxpool.Pool) Lock {
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			var ok bool
			if err := pool.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", advisoryKey).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return errBusy
			}
			return nil
		},
		UnlockFunc: func(ctx context.Context) error {
			var ok bool
			if err := pool.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", advisoryKey).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("pg_advisory_unlock(%d) returned false", advisoryKey)
			}
			return nil
		},
	}
}

// getLockPool is the classic MySQL pool bug: GET_LOCK and RELEASE_LOCK
// each run on whichever connection of the *sql.DB is free.
func getLockPool(db *sql.DB) Lock {
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			var got sql.NullInt64
			if err := db.QueryRowContext(ctx, "SELECT GET_LOCK('lock', 0)").Scan(&got); err != nil {
				return err
			}
			if got.Int64 != 1 {
				return errBusy
			}
			return nil
		},
		UnlockFunc: func(ctx context.Context) error {
			var got sql.NullInt64
			if err := db.QueryRowContext(ctx, "SELECT RELEASE_LOCK('lock')").Scan(&got); err != nil {
				return err
			}
			if got.Int64 != 1 {
				return fmt.Errorf("RELEASE_LOCK returned %v", got)
			}
			return nil
		},
	}
}

// getLockPinned is the fix: one *sql.Conn held from GET_LOCK to
// RELEASE_LOCK.
func getLockPinned(db *sql.DB) Lock {
	var conn *sql.Conn
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			c, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			var got sql.NullInt64
			if err := c.QueryRowContext(ctx, "SELECT GET_LOCK('lock', 0)").Scan(&got); err != nil {
				c.Close()
				return err
			}
			if got.Int64 != 1 {
				c.Close()
				return errBusy
			}
			conn = c
			return nil
		},
		UnlockFunc: func(ctx context.Context) error {
			c := conn
			conn = nil
			if c == nil {
				return errors.New("not held")
			}
			defer c.Close()
			var got sql.NullInt64
			if err := c.QueryRowContext(ctx, "SELECT RELEASE_LOCK('lock')").Scan(&got); err != nil {
				return err
			}
			if got.Int64 != 1 {
				return fmt.Errorf("RELEASE_LOCK returned %v", got)
			}
			return nil
		},
	}
}

// sqlAdvisoryPinned is the pinned-connection advisory lock through
// database/sql (driver pgx): one *sql.Conn from lock to unlock.
func sqlAdvisoryPinned(db *sql.DB) Lock {
	var conn *sql.Conn
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			c, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			var ok bool
			if err := c.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", advisoryKey).Scan(&ok); err != nil || !ok {
				c.Close()
				return errors.Join(err, map[bool]error{false: errBusy}[ok])
			}
			conn = c
			return nil
		},
		UnlockFunc: func(ctx context.Context) error {
			c := conn
			conn = nil
			if c == nil {
				return errors.New("not held")
			}
			defer c.Close()
			var ok bool
			if err := c.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", advisoryKey).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("pg_advisory_unlock(%d) returned false", advisoryKey)
			}
			return nil
		},
	}
}

// sqlAdvisoryPool is the pool bug through database/sql (driver pgx).
func sqlAdvisoryPool(db *sql.DB) Lock {
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			var ok bool
			if err := db.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", advisoryKey).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return errBusy
			}
			return nil
		},
		UnlockFunc: func(ctx context.Context) error {
			var ok bool
			if err := db.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", advisoryKey).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("pg_advisory_unlock(%d) returned false", advisoryKey)
			}
			return nil
		},
	}
}

// A session advisory lock that keeps one pooled connection from lock to
// unlock never lets two workers hold at once under the default classes
// (40 runs each, seed 1) but one: a server restart ends every session,
// and with it the lock, while the holder — working, not talking to the
// database — still believes it holds (the lock is not fenced). It is not
// live under every fault either: a partition of the service from the
// database longer than the liveness bound, a worker that dies holding its
// connection (its session keeps the lock), lost or late replies after
// which the session holds a lock its client gave up — each a finding about
// the lock that Expect declares.
func TestRunPostgresPinnedConnection(t *testing.T) {
	got := observeFindings(t)
	RunPostgres(t, pinnedAdvisoryLock, Options{TTL: 2 * time.Second, Expect: Expect{
		Restart: MutualExclusion | Resource, Partition: Liveness, Crash: Liveness, Drop: Liveness, Delay: Liveness,
	}})
	for _, c := range faults.Classes() {
		f, ok := got[c]
		if !ok {
			t.Errorf("%s: no finding; want every default class run", c)
			continue
		}
		if c != Restart && f.prop&(MutualExclusion|Resource) != 0 {
			t.Errorf("%s: pinned connection: %s\n%s", c, f.prop.found(), describe(t, c, f))
		}
	}
	for _, c := range []Class{Pause, Clock, Drift} {
		if f := got[c]; f.prop != Safe || f.runs != 40 {
			t.Errorf("%s: pinned connection: %s in %d runs, want safe in 40", c, f.prop.found(), f.runs)
		}
	}
	if f := got[Restart]; !strings.Contains(describe(t, Restart, f), "node-crash db1") {
		t.Errorf("restart: the counterexample does not restart the database:\n%s", describe(t, Restart, f))
	}
	if _, ok := got[Stall]; ok {
		t.Errorf("the stall class (Redis commands) ran for a database lock")
	}
}

// The classic pool bug — the lock and the unlock each sent through the
// pool, landing on whichever connection is free — breaks mutual exclusion
// with no fault at all: a worker handed the holder's idle connection is
// granted the lock again (advisory locks and GET_LOCK are re-entrant per
// session), then strands the lock on an idle pooled connection (the
// unlock ran on another session). RunPostgres, RunSQL over pgx and RunSQL
// over MySQL all flag it with their default options, a mutual-exclusion
// violation in a counterexample with no fault; the pinned connection
// passes the pause class of the same runs.
func TestPoolBugFlaggedByDefaultOptions(t *testing.T) {
	for _, which := range []string{"pgxpool-pool", "sql-pgx-pool", "sql-mysql-pool"} {
		out, err := helperArgs(t, which, []string{"-test.run=^TestDatabaseHelperProcess$"})
		if err == nil {
			t.Errorf("%s: default options passed the pool bug:\n%s", which, out)
			continue
		}
		re := regexp.MustCompile(`locktest: \w+ \(Run at database_test\.go:\d+\): mutual exclusion( and resource)? violated, expected safe`)
		if !re.MatchString(out) {
			t.Errorf("%s: no class line with a mutual-exclusion violation at the test's call:\n%s", which, out)
		}
		if !strings.Contains(out, "shrunk to 0 fault(s)") || !strings.Contains(out, "witness: ") {
			t.Errorf("%s: want a fault-free counterexample with its witness:\n%s", which, out)
		}
	}
	for _, which := range []string{"sql-pgx-pinned", "sql-mysql-pinned"} {
		out, err := helperArgs(t, which, []string{"-test.run=^TestDatabaseHelperProcess$"})
		if err != nil {
			t.Errorf("%s: the pinned connection failed the pause class:\n%s", which, out)
		}
	}
}

// TestDatabaseHelperProcess is not a test: TestPoolBugFlaggedByDefaultOptions
// runs it in a child process, in a temporary directory.
func TestDatabaseHelperProcess(t *testing.T) {
	which := os.Getenv("LOCKTEST_HELPER")
	if !strings.HasPrefix(which, "pgxpool-") && !strings.HasPrefix(which, "sql-") {
		t.Skip("run by TestPoolBugFlaggedByDefaultOptions")
	}
	t.Chdir(t.TempDir())
	defaults := Options{TTL: 2 * time.Second}
	pause := Options{TTL: 2 * time.Second, Classes: []Class{Pause}}
	switch which {
	case "pgxpool-pool":
		RunPostgres(t, poolAdvisoryLock, defaults)
	case "sql-pgx-pool":
		RunSQL(t, DriverPgx, sqlAdvisoryPool, defaults)
	case "sql-mysql-pool":
		RunSQL(t, DriverMySQL, getLockPool, defaults)
	case "sql-pgx-pinned":
		RunSQL(t, DriverPgx, sqlAdvisoryPinned, pause)
	case "sql-mysql-pinned":
		RunSQL(t, DriverMySQL, getLockPinned, pause)
	case "sql-bad-driver":
		RunSQL(t, "mysq", getLockPinned, pause)
	case "sql-failover-no-standby":
		RunSQL(t, DriverPgx, sqlAdvisoryPinned, Options{TTL: 2 * time.Second, Classes: []Class{Failover}})
	}
}

// A database lock's counterexample is saved as a failfile naming the
// database backend's lock and replayed first on the next run, as a Redis
// lock's is; Options.Replay replays it from code.
func TestDatabaseFailfileReplays(t *testing.T) {
	got := observeFindings(t)
	opt := Options{TTL: 2 * time.Second, Classes: []Class{Pause}, Expect: Expect{Pause: MutualExclusion | Resource}}
	RunSQL(t, DriverMySQL, getLockPool, opt)
	file := filepath.Join("testdata", "locktest", t.Name(), "pause.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no failfile: %v (finding: %s)", err, got[Pause].what)
	}
	if !strings.Contains(string(data), "custom-mysql") || !strings.Contains(string(data), "shared_pool") {
		t.Errorf("failfile does not name the MySQL lock and its params:\n%s", data)
	}
	RunSQL(t, DriverMySQL, getLockPool, opt)
	if f := got[Pause]; !strings.Contains(f.what, "the saved counterexample "+file) || f.prop&MutualExclusion == 0 {
		t.Errorf("second run: %q, %s; want the saved counterexample replayed, violating mutual exclusion", f.what, f.prop)
	}
	replayOpt := opt
	replayOpt.Replay = file
	RunSQL(t, DriverMySQL, getLockPool, replayOpt)
	if f := got[Pause]; f.what != "replay of "+file || f.prop&MutualExclusion == 0 {
		t.Errorf("Options.Replay: %q, %s; want the replay of %s violating mutual exclusion", f.what, f.prop, file)
	}
	// The pinned connection passes the saved counterexample of the pool
	// bug: the same workload, its connection kept from lock to unlock.
	pinnedOpt := replayOpt
	pinnedOpt.Expect = nil
	RunSQL(t, DriverMySQL, getLockPinned, pinnedOpt)
	if f := got[Pause]; f.prop != Safe {
		t.Errorf("pinned connection on the pool bug's counterexample: %s, want safe", f.prop.found())
	}
}

// Bad input names what was expected: an unknown driver, an unknown or bad
// database param (with a did-you-mean), Redis-only options and classes.
func TestDatabaseMisuseIsExplained(t *testing.T) {
	out, err := helperArgs(t, "sql-bad-driver", []string{"-test.run=^TestDatabaseHelperProcess$"})
	if err == nil || !strings.Contains(out, `locktest: RunSQL: unknown driver "mysq"; expected "pgx", "mysql" or "sqlserver" (did you mean mysql?)`) {
		t.Errorf("bad driver: err %v, output:\n%s", err, out)
	}
	out, err = helperArgs(t, "sql-failover-no-standby", []string{"-test.run=^TestDatabaseHelperProcess$"})
	if err == nil || !strings.Contains(out, `locktest: Options.Classes: failover needs a Postgres standby to promote: Options.Database.Params{"standby": "true"}`) {
		t.Errorf("failover without a standby: err %v, output:\n%s", err, out)
	}
	opt := Options{TTL: 2 * time.Second, Database: Database{Params: map[string]string{"poolr": "transaction"}}}
	if err := opt.defaults(); err != nil {
		t.Fatal(err)
	}
	_, err = opt.dbBase(customPostgres)
	if err == nil || !strings.Contains(err.Error(), "poolr") || !strings.Contains(err.Error(), "pooler") {
		t.Errorf("unknown param: %v; want it named with a did-you-mean of pooler", err)
	}
	opt.Database.Params = map[string]string{"pooler": "statement"}
	_, err = opt.dbBase(customPostgres)
	if err == nil || !strings.Contains(err.Error(), "none, session or transaction") {
		t.Errorf("bad pooler: %v; want the expected values named", err)
	}
	opt.Database.Params = map[string]string{"wait_timeout": "10s", "shared_pool": "false"}
	if _, err = opt.dbBase(customMySQL); err != nil {
		t.Errorf("valid MySQL params refused: %v", err)
	}
}

// The README's example ("Database locks in locktest"), as written there:
// a GET_LOCK on a pinned *sql.Conn, its expectations asserted by Run.
func TestReadmeGetLockExample(t *testing.T) {
	t.Chdir(t.TempDir())
	RunSQL(t, DriverMySQL, func(db *sql.DB) Lock {
		var conn *sql.Conn // one session from GET_LOCK to RELEASE_LOCK
		return Funcs{
			LockFunc: func(ctx context.Context) error {
				c, err := db.Conn(ctx)
				if err != nil {
					return err
				}
				var got sql.NullInt64
				if err := c.QueryRowContext(ctx, "SELECT GET_LOCK('jobs', 0)").Scan(&got); err != nil || got.Int64 != 1 {
					c.Close()
					return errors.Join(err, errors.New("busy"))
				}
				conn = c
				return nil
			},
			UnlockFunc: func(ctx context.Context) error {
				defer conn.Close()
				var released sql.NullInt64
				return conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK('jobs')").Scan(&released)
			},
		}
	}, Options{TTL: 2 * time.Second, Expect: Expect{
		Restart:   MutualExclusion | Resource, // named locks live in memory
		Partition: Liveness, Crash: Liveness, Delay: Liveness,
	}})
}

// dsnLock is a lock that opens its own pool from a DSN, as a lock library
// taking a connection string does, and closes it (io.Closer).
type dsnLock struct {
	lock   Lock
	db     *sql.DB
	closed *atomic.Int64
}

func (l dsnLock) Lock(ctx context.Context) error   { return l.lock.Lock(ctx) }
func (l dsnLock) Unlock(ctx context.Context) error { return l.lock.Unlock(ctx) }

func (l dsnLock) Close() error {
	l.closed.Add(1)
	return l.db.Close()
}

// RunMySQLDSN hands a DSN that go-sql-driver/mysql dials, through a
// network registered for the client, to the simulated server: a lock
// opening its own pool from it works as on a *sql.DB — the pinned
// GET_LOCK is safe under pauses, the pool bug is flagged — and the pool
// it opened is closed through io.Closer when its client ends.
func TestRunMySQLDSN(t *testing.T) {
	got := observeFindings(t)
	var closed atomic.Int64
	dsnFactory := func(build func(*sql.DB) Lock) DSNFactory {
		return func(dsn string) Lock {
			if !strings.Contains(dsn, "@locklab") || !strings.Contains(dsn, "(db1:3306)/lab") {
				t.Errorf("DSN %q does not name a locklab network and db1", dsn)
			}
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Errorf("sql.Open: %v", err)
				return nil
			}
			return dsnLock{lock: build(db), db: db, closed: &closed}
		}
	}
	opt := Options{TTL: 2 * time.Second, Classes: []Class{Pause}, Database: Database{Params: map[string]string{"shared_pool": "false"}}}
	RunMySQLDSN(t, dsnFactory(getLockPinned), opt)
	if f := got[Pause]; f.prop != Safe || f.runs != 40 {
		t.Errorf("pause: pinned GET_LOCK through a DSN: %s in %d runs, want safe in 40", f.prop.found(), f.runs)
	}
	if closed.Load() == 0 {
		t.Errorf("no pool opened from a DSN was closed")
	}
}

// With a standby (params standby: true), RunPostgres adds the failover
// class: the primary dies and the standby, which has none of its advisory
// locks, is promoted. A session lock on a pinned connection is then held
// twice: the holder works on while another worker takes the same key on
// the new primary (issue 22: failover forgets locks; Patroni).
func TestRunPostgresFailoverForgetsLocks(t *testing.T) {
	got := observeFindings(t)
	opt := Options{TTL: 2 * time.Second, Classes: []Class{Failover}, Expect: Expect{Failover: MutualExclusion | Resource},
		Database: Database{Params: map[string]string{"standby": "true"}}}
	RunPostgres(t, pinnedAdvisoryLock, opt)
	f, ok := got[Failover]
	if !ok || f.prop&MutualExclusion == 0 {
		t.Fatalf("failover: %s in %d runs, want mutual exclusion violated", f.prop.found(), f.runs)
	}
	d := describe(t, Failover, f)
	if !strings.Contains(d, "node-crash db1") || !strings.Contains(d, "failover db2") {
		t.Errorf("failover: the counterexample does not crash db1 and promote db2:\n%s", d)
	}
}

// xactAdvisoryLock holds a transaction lock in an open transaction on a
// pinned connection: BEGIN; pg_try_advisory_xact_lock ... COMMIT. A
// transaction-mode pooler keeps one server connection from BEGIN to
// COMMIT, so it is the fix for PgBouncer.
func xactAdvisoryLock(pool *pgxpool.Pool) Lock {
	var conn *pgxpool.Conn
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			c, err := pool.Acquire(ctx)
			if err != nil {
				return err
			}
			if _, err := c.Exec(ctx, "BEGIN"); err != nil {
				c.Release()
				return err
			}
			var ok bool
			if err := c.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", advisoryKey).Scan(&ok); err != nil || !ok {
				_, rerr := c.Exec(ctx, "ROLLBACK")
				c.Release()
				return errors.Join(err, rerr, errBusy)
			}
			conn = c
			return nil
		},
		UnlockFunc: func(ctx context.Context) error {
			c := conn
			conn = nil
			if c == nil {
				return errors.New("not held")
			}
			defer c.Release()
			_, err := c.Exec(ctx, "COMMIT")
			return err
		},
	}
}

// Behind PgBouncer in transaction mode (params pooler: transaction, one
// pool per client), a session lock on a pinned client connection still
// breaks with no fault: its statements run on whichever server connection
// is free, so a second client is granted the lock on the holder's backend,
// or the holder's unlock lands on another backend, returns false and
// strands the lock (pgbouncer#102, authentik#23876); the first run of
// seed 1 shows the stranded lock. The transaction lock passes the same
// class, and the counterexample's HTML report is written as for a Redis
// lock (-locktest.report).
func TestRunPostgresBehindTransactionPooler(t *testing.T) {
	got := observeFindings(t)
	*flagReport = "out.html"
	t.Cleanup(func() { *flagReport = "" })
	params := map[string]string{"pooler": "transaction", "shared_pool": "false"}
	RunPostgres(t, pinnedAdvisoryLock, Options{TTL: 2 * time.Second, Classes: []Class{Pause}, Expect: Expect{Pause: Any},
		Database: Database{Params: params}})
	f := got[Pause]
	if f.prop&(MutualExclusion|Liveness) == 0 {
		t.Fatalf("pause behind a transaction pooler: session lock %s in %d runs, want mutual exclusion or liveness violated", f.prop.found(), f.runs)
	}
	if len(f.sc.Faults) != 0 {
		t.Errorf("want a fault-free counterexample, got %d fault(s)", len(f.sc.Faults))
	}
	if data, err := os.ReadFile("out-pause.html"); err != nil || !strings.Contains(string(data), "pgbouncer") {
		t.Errorf("report out-pause.html: %v, or it does not show the pooler (%d bytes)", err, len(data))
	}
	RunPostgres(t, xactAdvisoryLock, Options{TTL: 2 * time.Second, Classes: []Class{Pause}, Database: Database{Params: params}})
	if f := got[Pause]; f.prop != Safe || f.runs != 40 {
		t.Errorf("pause behind a transaction pooler: transaction lock %s in %d runs, want safe in 40", f.prop.found(), f.runs)
	}
}

// A database lock's runs depend only on the seed: exploring the same
// class twice finds the same counterexample with the same trace, pool
// goroutines, keepalive timers and all.
func TestDatabaseRunsAreDeterministic(t *testing.T) {
	got := observeFindings(t)
	var digests []string
	for i := range 2 {
		t.Chdir(t.TempDir()) // no failfile replayed the second time
		RunPostgres(t, poolAdvisoryLock, Options{TTL: 2 * time.Second, Classes: []Class{Partition}, Expect: Expect{Partition: Any}})
		f := got[Partition]
		if f.res == nil {
			t.Fatalf("run %d: no counterexample (%s in %d runs)", i, f.prop.found(), f.runs)
		}
		sc := f.sc.Clone()
		sc.ID = "" // names the subtest, partition#01 the second time
		data, err := sc.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, fmt.Sprintf("%s %d\n%s", f.res.TraceSHA256, f.res.TraceLines, data))
	}
	if digests[0] != digests[1] {
		t.Errorf("two explorations of seed 1 differ:\n%s\n---\n%s", digests[0], digests[1])
	}
}

// MySQL ends a session idle longer than wait_timeout and frees its named
// locks; a holder's pinned connection is idle while it works, so a holder
// whose pause stretches its hold past wait_timeout (set to the TTL here)
// has lost the lock to the next holder by the time it writes. The same
// lock with MariaDB's default wait_timeout (8 h) passes the pause class
// (TestReadmeGetLockExample).
func TestRunSQLPauseOutlastsWaitTimeout(t *testing.T) {
	got := observeFindings(t)
	RunSQL(t, DriverMySQL, getLockPinned, Options{TTL: 2 * time.Second, Classes: []Class{Pause}, Expect: Expect{Pause: MutualExclusion | Resource},
		Database: Database{Params: map[string]string{"wait_timeout": "2s"}}})
	f := got[Pause]
	if f.prop&MutualExclusion == 0 {
		t.Fatalf("pause with wait_timeout 2s: %s in %d runs, want mutual exclusion violated", f.prop.found(), f.runs)
	}
	if d := describe(t, Pause, f); !strings.Contains(d, "pause ") {
		t.Errorf("the counterexample pauses nobody:\n%s", d)
	}
}

// Options.Workers splits a database lock's exploration across worker
// processes as it does a Redis lock's: the pool bug's partition class
// finds the fault-free counterexample of run 1 (what one process finds:
// TestPoolBugFlaggedByDefaultOptions).
func TestDatabaseWorkers(t *testing.T) {
	got := observeFindings(t)
	before := workersStarted.Load()
	// TestWorkersSameCounterexampleRedsync counts the workers started in
	// the whole process.
	t.Cleanup(func() { workersStarted.Store(before) })
	RunPostgres(t, poolAdvisoryLock, Options{TTL: 2 * time.Second, Classes: []Class{Partition}, Expect: Expect{Partition: Any}, Workers: 2})
	if *flagShard != "" {
		return // a worker process: it explored its shard
	}
	if n := workersStarted.Load() - before; n != 2 {
		t.Errorf("started %d worker processes, want 2", n)
	}
	f := got[Partition]
	if f.prop&MutualExclusion == 0 || f.sc == nil || len(f.sc.Faults) != 0 || !strings.Contains(f.what, "run 1 of 40") {
		t.Errorf("workers: %s (%s); want mutual exclusion violated in run 1, shrunk to no fault", f.prop.found(), f.what)
	}
}
