package pgnode

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// connect opens a real, unmodified pgx connection to srv over an in-memory
// pipe, in the given query mode (extended protocol by default, or simple).
// tune, if given, adjusts the pgx configuration first.
func connect(t testing.TB, srv *Server, mode pgx.QueryExecMode, tune ...func(*pgx.ConnConfig)) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig("postgres://locklab@pg-sim:5432/lab?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) { return []string{host}, nil }
	var backends sync.WaitGroup // every dial: the session and pgx's cancel requests
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		client, server := net.Pipe()
		backends.Add(1)
		go func() { defer backends.Done(); _ = srv.Serve(server) }()
		return client, nil
	}
	for _, f := range tune {
		f(cfg)
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close(context.Background())
		backends.Wait()
	})
	return conn
}

func queryBool(t *testing.T, c *pgx.Conn, sql string, args ...any) bool {
	t.Helper()
	var b bool
	if err := c.QueryRow(context.Background(), sql, args...).Scan(&b); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return b
}

func execSQL(t *testing.T, c *pgx.Conn, sql string, args ...any) pgconn.CommandTag {
	t.Helper()
	tag, err := c.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag
}

var modes = map[string]pgx.QueryExecMode{
	"extended": pgx.QueryExecModeCacheStatement,
	"describe": pgx.QueryExecModeDescribeExec,
	"simple":   pgx.QueryExecModeSimpleProtocol,
}

func forEachMode(t *testing.T, f func(t *testing.T, mode pgx.QueryExecMode)) {
	for _, name := range []string{"extended", "describe", "simple"} {
		t.Run(name, func(t *testing.T) { f(t, modes[name]) })
	}
}

func TestPgxSessionLocks(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode pgx.QueryExecMode) {
		srv := NewServer()
		a, b := connect(t, srv, mode), connect(t, srv, mode)
		execSQL(t, a, "SELECT pg_advisory_lock($1)", int64(42))
		if queryBool(t, b, "SELECT pg_try_advisory_lock($1)", int64(42)) {
			t.Fatal("b took key 42 while a holds it")
		}
		if !queryBool(t, a, "select pg_try_advisory_lock($1)", int64(42)) {
			t.Fatal("a could not stack a second hold on its own key")
		}
		if queryBool(t, b, "SELECT pg_advisory_unlock($1)", int64(42)) {
			t.Fatal("b released a lock it does not hold")
		}
		if !queryBool(t, a, "SELECT pg_advisory_unlock($1)", int64(42)) || queryBool(t, b, "SELECT pg_try_advisory_lock($1)", int64(42)) {
			t.Fatal("one unlock of a twice-held key must keep it held")
		}
		if !queryBool(t, a, "SELECT pg_advisory_unlock($1)", int64(42)) || !queryBool(t, b, "SELECT pg_try_advisory_lock($1)", int64(42)) {
			t.Fatal("second unlock must free the key for b")
		}
		// Negative keys and the two-int4 key space are separate keys.
		if !queryBool(t, a, "SELECT pg_try_advisory_lock($1, $2)", int32(0), int32(42)) {
			t.Fatal("pair key (0,42) must be distinct from bigint 42")
		}
		if !queryBool(t, a, "SELECT pg_try_advisory_lock($1)", int64(-7)) {
			t.Fatal("negative key")
		}
		got := srv.Locks()
		want := []LockRow{
			{Key: Key{A: -7}, Session: 1, Granted: true},
			{Key: Key{A: 42}, Session: 2, Granted: true},
			{Key: Key{Pair: true, A: 0, B: 42}, Session: 1, Granted: true},
		}
		if len(got) != len(want) {
			t.Fatalf("locks = %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("locks = %+v, want %+v", got, want)
			}
		}
		execSQL(t, a, "SELECT pg_advisory_unlock_all()")
		if rows := srv.Locks(); len(rows) != 1 || rows[0].Session != 2 {
			t.Fatalf("after unlock_all: %+v", rows)
		}
	})
}

func TestPgxBlockingLockIsGrantedOnRelease(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode pgx.QueryExecMode) {
		srv := NewServer()
		a, b := connect(t, srv, mode), connect(t, srv, mode)
		execSQL(t, a, "SELECT pg_advisory_lock($1)", int64(1))
		granted := make(chan error)
		go func() {
			_, err := b.Exec(context.Background(), "SELECT pg_advisory_lock($1)", int64(1))
			granted <- err
		}()
		waitForWaiter(t, srv)
		execSQL(t, a, "SELECT pg_advisory_unlock($1)", int64(1))
		if err := <-granted; err != nil {
			t.Fatal(err)
		}
		if rows := srv.Locks(); len(rows) != 1 || rows[0].Session != 2 || !rows[0].Granted {
			t.Fatalf("after hand-over: %+v", rows)
		}
	})
}

// waitForWaiter blocks until the table shows a queued request. The test
// runs outside the simulation, so it polls the table: each poll yields
// to the scheduler rather than sleeping.
func waitForWaiter(t *testing.T, srv *Server) {
	t.Helper()
	for {
		for _, r := range srv.Locks() {
			if !r.Granted {
				return
			}
		}
		chanYield()
	}
}

func chanYield() {
	ch := make(chan struct{})
	go close(ch)
	<-ch
}

func TestPgxSessionEndReleasesLocks(t *testing.T) {
	srv := NewServer()
	a, b := connect(t, srv, modes["extended"]), connect(t, srv, modes["extended"])
	execSQL(t, a, "SELECT pg_advisory_lock($1)", int64(5))
	execSQL(t, a, "BEGIN")
	execSQL(t, a, "SELECT pg_advisory_xact_lock($1)", int64(6))
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for len(srv.Locks()) != 0 {
		chanYield() // the backend notices Terminate asynchronously
	}
	if !queryBool(t, b, "SELECT pg_try_advisory_lock($1)", int64(5)) {
		t.Fatal("lock of a closed session still held")
	}
}

func TestPgxXactLocksEndWithTransaction(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode pgx.QueryExecMode) {
		srv := NewServer()
		a, b := connect(t, srv, mode), connect(t, srv, mode)
		// Outside a block, the implicit transaction ends with the statement.
		if !queryBool(t, a, "SELECT pg_try_advisory_xact_lock($1)", int64(9)) {
			t.Fatal("xact lock refused")
		}
		if len(srv.Locks()) != 0 {
			t.Fatalf("xact lock outlived its implicit transaction: %+v", srv.Locks())
		}
		for _, end := range []string{"COMMIT", "ROLLBACK"} {
			execSQL(t, a, "BEGIN")
			execSQL(t, a, "SELECT pg_advisory_xact_lock_shared($1)", int64(9))
			if !queryBool(t, b, "SELECT pg_try_advisory_lock_shared($1)", int64(9)) {
				t.Fatal("shared locks must not conflict")
			}
			if queryBool(t, b, "SELECT pg_try_advisory_xact_lock($1)", int64(9)) {
				t.Fatal("exclusive granted over a shared hold")
			}
			// pg_advisory_unlock_shared does not release xact locks.
			if queryBool(t, a, "SELECT pg_advisory_unlock_shared($1)", int64(9)) {
				t.Fatal("unlock released a transaction-level lock")
			}
			if tag := execSQL(t, a, end); tag.String() != end {
				t.Fatalf("tag %q, want %q", tag, end)
			}
			if rows := srv.Locks(); len(rows) != 1 || rows[0].Session != 2 {
				t.Fatalf("after %s: %+v", end, rows)
			}
			execSQL(t, b, "SELECT pg_advisory_unlock_shared($1)", int64(9))
		}
	})
}

func TestPgxFenceComparesOnWrite(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode pgx.QueryExecMode) {
		srv := NewServer()
		a := connect(t, srv, mode)
		fence := "UPDATE fence SET token = $1 WHERE token < $1"
		if tag := execSQL(t, a, fence, int64(3)); tag.RowsAffected() != 1 {
			t.Fatalf("first write: %s", tag)
		}
		if tag := execSQL(t, a, fence, int64(2)); tag.RowsAffected() != 0 {
			t.Fatalf("stale token accepted: %s", tag)
		}
		execSQL(t, a, "BEGIN")
		execSQL(t, a, fence, int64(10))
		execSQL(t, a, "ROLLBACK")
		var tok int64
		if err := a.QueryRow(context.Background(), "SELECT token FROM fence").Scan(&tok); err != nil || tok != 3 {
			t.Fatalf("token %d, %v; want 3 (rolled-back write discarded)", tok, err)
		}
	})
}

func TestPgxErrorsAreRealErrorResponses(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode pgx.QueryExecMode) {
		srv := NewServer()
		a := connect(t, srv, mode)
		cases := []struct{ sql, code, msg string }{
			{"SELECT pg_advisory_lok(1)", "42883", "function pg_advisory_lok(integer) does not exist"},
			{"SELECT pg_advisory_lock(1, 2, 3)", "42883", "function pg_advisory_lock(integer, integer, integer) does not exist"},
			{"DELETE FROM locks", "42601", `syntax error at or near "DELETE"`},
			{"SELECT 1 +", "42601", `syntax error at or near "+"`},
		}
		for _, c := range cases {
			_, err := a.Exec(context.Background(), c.sql)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != c.code || pgErr.Message != c.msg {
				t.Fatalf("%s: got %v, want SQLSTATE %s %q", c.sql, err, c.code, c.msg)
			}
		}
		// An error inside a block aborts it until ROLLBACK.
		execSQL(t, a, "BEGIN")
		_, _ = a.Exec(context.Background(), "SELECT nonsense(1)")
		_, err := a.Exec(context.Background(), "SELECT 1")
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "25P02" {
			t.Fatalf("statement in failed block: %v", err)
		}
		if tag := execSQL(t, a, "COMMIT"); tag.String() != "ROLLBACK" {
			t.Fatalf("COMMIT of a failed block reported %q", tag)
		}
		var one int32
		if err := a.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("SELECT 1 = %d, %v", one, err)
		}
	})
}

func TestParseStatementShapes(t *testing.T) {
	for _, q := range []string{
		"select pg_advisory_lock(-42)",
		"SELECT pg_advisory_lock( - 42 )",
		"SELECT pg_advisory_lock((42)::bigint) AS locked;",
		"begin transaction", "START TRANSACTION", "end", "abort work",
		"SELECT pg_advisory_unlock_all()",
	} {
		if _, err := ParseStatement(q); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
	st, _ := ParseStatement("SELECT pg_advisory_lock( - 42 )")
	if st.Args[0].Value != -42 {
		t.Errorf("negated literal = %d", st.Args[0].Value)
	}
	_, err := ParseStatement("SELECT 1; SELECT 2")
	if err == nil || !strings.Contains(err.Error(), "multiple commands") {
		t.Errorf("two statements in one Parse: %v", err)
	}
}

// A pg_advisory_lock wait bounded by a context: pgx sends a CancelRequest
// on a second connection when the context ends, and the server fails the
// wait with 57014, leaving the session usable and out of the queue.
func TestPgxContextCancelsLockWait(t *testing.T) {
	srv := NewServer()
	cancelRequests := func(cfg *pgx.ConnConfig) {
		cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			// The fallback deadline is far beyond the test: the cancel
			// request, not a broken connection, must end the wait.
			return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Hour}
		}
	}
	a, b := connect(t, srv, modes["extended"]), connect(t, srv, modes["extended"], cancelRequests)
	execSQL(t, a, "SELECT pg_advisory_lock($1)", int64(3))
	ctx, cancel := context.WithCancel(context.Background())
	failed := make(chan error)
	go func() {
		_, err := b.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(3))
		failed <- err
	}()
	waitForWaiter(t, srv)
	cancel()
	err := <-failed
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("cancelled wait returned %v, want SQLSTATE 57014", err)
	}
	if rows := srv.Locks(); len(rows) != 1 || !rows[0].Granted {
		t.Fatalf("the cancelled request is still queued: %+v", rows)
	}
	execSQL(t, a, "SELECT pg_advisory_unlock($1)", int64(3))
	if !queryBool(t, b, "SELECT pg_try_advisory_lock($1)", int64(3)) {
		t.Fatal("session unusable after its cancelled wait")
	}
}
