package pgnode

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// TestDifferentialPostgresAdvisoryLocks drives the simulated server and a
// real Postgres 15 with the same random sequences of lock functions over
// three sessions, through the same real pgx client, and requires the same
// reply to every statement and the same advisory rows of pg_locks after
// it. The sequences mix session and transaction locks, shared and
// exclusive modes, both key spaces, BEGIN/COMMIT/ROLLBACK, a failing
// statement (which aborts an open block), and sessions closed and opened
// again. Waiting calls (pg_advisory_lock) are left to the pgx tests of
// backend_test.go: here a statement must return for the sequence to go on.
func TestDifferentialPostgresAdvisoryLocks(t *testing.T) {
	url := realPostgres(t)
	ctx := context.Background()
	observer, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close(ctx)
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			d := newDiffRun(t, url, observer)
			rng := rand.New(rand.NewSource(seed))
			for step := 0; step < 120; step++ {
				slot := rng.Intn(len(d.real))
				sql, args := randomStatement(rng)
				if sql == "reopen" {
					d.reopen(slot)
				} else {
					want, got := reply(d.real[slot], sql, args), reply(d.sim[slot], sql, args)
					if want != got {
						t.Fatalf("step %d session %d %s %v:\n real: %s\n sim:  %s", step, slot+1, sql, args, want, got)
					}
				}
				want, got := realLocks(t, observer, d.realSlot), d.simLocks()
				if describeRows(want) != describeRows(got) {
					t.Fatalf("step %d session %d %s %v: pg_locks differ\n real:%s\n sim:%s", step, slot+1, sql, args, describeRows(want), describeRows(got))
				}
			}
		})
	}
}

// diffRun is one sequence's pair of worlds: slot i is session i+1 on both.
type diffRun struct {
	t         *testing.T
	url       string
	observer  *pgx.Conn
	srv       *Server
	real, sim []*pgx.Conn
	realSlot  map[uint32]Session // backend pid → slot+1
	simSlot   map[Session]Session
}

func newDiffRun(t *testing.T, url string, observer *pgx.Conn) *diffRun {
	d := &diffRun{t: t, url: url, observer: observer, srv: NewServer(),
		realSlot: map[uint32]Session{}, simSlot: map[Session]Session{}}
	for i := 0; i < 3; i++ {
		d.real = append(d.real, nil)
		d.sim = append(d.sim, nil)
		d.open(i)
	}
	t.Cleanup(d.closeAll)
	return d
}

func (d *diffRun) open(slot int) {
	ctx := context.Background()
	rc, err := pgx.Connect(ctx, d.url)
	if err != nil {
		d.t.Fatal(err)
	}
	d.real[slot] = rc
	d.realSlot[rc.PgConn().PID()] = Session(slot + 1)
	cfg, _ := pgx.ParseConfig("postgres://locklab@pg-sim:5432/lab?sslmode=disable")
	cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) { return []string{host}, nil }
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() { _ = d.srv.Serve(server) }()
		return client, nil
	}
	sc, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		d.t.Fatal(err)
	}
	d.sim[slot] = sc
	d.simSlot[Session(sc.PgConn().PID())] = Session(slot + 1)
}

// reopen closes slot's connection on both sides, waits until both servers
// have ended the backend (its locks are gone), and connects again.
func (d *diffRun) reopen(slot int) {
	ctx := context.Background()
	pid, sid := d.real[slot].PgConn().PID(), Session(d.sim[slot].PgConn().PID())
	_ = d.real[slot].Close(ctx)
	_ = d.sim[slot].Close(ctx)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var n int
		if err := d.observer.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int32(pid)).Scan(&n); err != nil {
			d.t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("real backend %d did not exit", pid)
		}
	}
	for d.simHolds(sid) {
		chanYield()
	}
	delete(d.realSlot, pid)
	delete(d.simSlot, sid)
	d.open(slot)
}

func (d *diffRun) simHolds(sid Session) bool {
	for _, r := range d.srv.Locks() {
		if r.Session == sid {
			return true
		}
	}
	return false
}

func (d *diffRun) simLocks() []LockRow {
	rows := d.srv.Locks()
	for i := range rows {
		rows[i].Session = d.simSlot[rows[i].Session]
	}
	return sortRows(rows)
}

func (d *diffRun) closeAll() {
	for i := range d.real {
		if d.real[i] == nil || d.sim[i] == nil {
			continue
		}
		_ = d.real[i].Close(context.Background())
		_ = d.sim[i].Close(context.Background())
	}
}

// randomStatement draws one step: a non-waiting lock function on one of
// four keys (two bigint, one of them past 2^32 so classid is used, and two
// int4 pairs), a transaction command, a failing statement, or "reopen".
func randomStatement(rng *rand.Rand) (string, []any) {
	funcs := []string{
		"pg_try_advisory_lock", "pg_try_advisory_lock_shared",
		"pg_try_advisory_xact_lock", "pg_try_advisory_xact_lock_shared",
		"pg_advisory_unlock", "pg_advisory_unlock_shared",
	}
	switch r := rng.Intn(21); {
	case r < 12:
		f := funcs[rng.Intn(len(funcs))]
		switch rng.Intn(4) {
		case 0:
			return "SELECT " + f + "($1)", []any{int64(7)}
		case 1:
			return "SELECT " + f + "($1)", []any{int64(1<<32 + 7)}
		case 2:
			return "SELECT " + f + "($1, $2)", []any{int32(0), int32(7)}
		default:
			return "SELECT " + f + "($1, $2)", []any{int32(-3), int32(7)}
		}
	case r < 13:
		return "SELECT pg_advisory_unlock_all()", nil
	case r < 15:
		return "BEGIN", nil
	case r < 16:
		return "COMMIT", nil
	case r < 17:
		return "ROLLBACK", nil
	case r < 18:
		return "SELECT pg_advisory_lok(1)", nil
	case r < 19:
		return "SELECT 1", nil
	case r < 20:
		// PgBouncer's server_reset_query: releases the session's
		// advisory locks and deallocates pgx's cached statements.
		return "DISCARD ALL", nil
	}
	return "reopen", nil
}

// reply runs a statement and renders what the client saw: the values, the
// command tag, or the SQLSTATE and message of the error.
func reply(c *pgx.Conn, sql string, args []any) string {
	return replyIn(context.Background(), c, sql, args)
}

func replyIn(ctx context.Context, c *pgx.Conn, sql string, args []any) string {
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return renderErr(err)
	}
	var vals []any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return "scan: " + err.Error()
		}
		vals = append(vals, v...)
	}
	if err := rows.Err(); err != nil {
		return renderErr(err)
	}
	return fmt.Sprintf("%v %s", vals, rows.CommandTag())
}

func renderErr(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return fmt.Sprintf("ERROR %s %s", pgErr.Code, pgErr.Message)
	}
	return "error: " + err.Error()
}

// TestDifferentialPostgresCancelledWait plays one fixed story on both
// servers: a shared hold, an exclusive request queued behind it, a shared
// try that the queued request refuses (lock.c checks the wait queue
// before granting), a CancelRequest ending the wait with 57014, and the
// shared try granted afterwards. Replies and pg_locks must agree at each
// step.
func TestDifferentialPostgresCancelledWait(t *testing.T) {
	url := realPostgres(t)
	ctx := context.Background()
	observer, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close(ctx)
	d := newDiffRun(t, url, observer)
	// Slot 1 waits; give it pgx's cancel-request context handling on
	// both sides.
	for i, c := range []*pgx.Conn{d.real[1], d.sim[1]} {
		cfg := c.Config()
		cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: time.Hour}
		}
		nc, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Close(ctx)
		if i == 0 {
			delete(d.realSlot, c.PgConn().PID())
			d.real[1] = nc
			d.realSlot[nc.PgConn().PID()] = 2
		} else {
			delete(d.simSlot, Session(c.PgConn().PID()))
			d.sim[1] = nc
			d.simSlot[Session(nc.PgConn().PID())] = 2
		}
	}
	same := func(step string, want, got string, expect ...string) {
		t.Helper()
		if len(expect) > 0 && want != expect[0] {
			t.Fatalf("%s: real Postgres replied %s, the test expects %s", step, want, expect[0])
		}
		if want != got {
			t.Fatalf("%s:\n real: %s\n sim:  %s", step, want, got)
		}
		if w, g := describeRows(realLocks(t, observer, d.realSlot)), describeRows(d.simLocks()); w != g {
			t.Fatalf("%s: pg_locks differ\n real:%s\n sim:%s", step, w, g)
		}
	}
	key := []any{int64(9)}
	same("shared hold", reply(d.real[0], "SELECT pg_try_advisory_lock_shared($1)", key), reply(d.sim[0], "SELECT pg_try_advisory_lock_shared($1)", key))

	waitCtx, cancel := context.WithCancel(ctx)
	realDone, simDone := make(chan string), make(chan string)
	go func() { realDone <- replyIn(waitCtx, d.real[1], "SELECT pg_advisory_lock($1)", key) }()
	go func() { simDone <- replyIn(waitCtx, d.sim[1], "SELECT pg_advisory_lock($1)", key) }()
	for deadline := time.Now().Add(30 * time.Second); len(realLocks(t, observer, d.realSlot)) < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the real exclusive request never queued")
		}
	}
	waitForWaiter(t, d.srv)
	same("exclusive queued", "", "")
	same("shared try behind the queue", reply(d.real[2], "SELECT pg_try_advisory_lock_shared($1)", key), reply(d.sim[2], "SELECT pg_try_advisory_lock_shared($1)", key), "[false] SELECT 1")
	cancel()
	same("cancelled wait", <-realDone, <-simDone, "ERROR 57014 canceling statement due to user request")
	same("shared try after the cancel", reply(d.real[2], "SELECT pg_try_advisory_lock_shared($1)", key), reply(d.sim[2], "SELECT pg_try_advisory_lock_shared($1)", key), "[true] SELECT 1")
}
