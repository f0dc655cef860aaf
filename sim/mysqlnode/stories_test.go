package mysqlnode

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// TestDifferentialMySQLStories plays the fixed stories of the bubble tests
// on the simulated server and on a real MariaDB 10.11, through the same
// unmodified driver, and requires the same replies at each step: the
// deadlock victim, wait_timeout freeing an idle session's lock, and the
// database/sql pool releasing on the wrong connection. The simulated
// server runs on the time package's clock here (real time, outside a
// bubble), as the real server does.
func TestDifferentialMySQLStories(t *testing.T) {
	dsn := realMariaDB(t)
	sides := func(t *testing.T) (real, sim *sql.DB, srv *Server) {
		srv = NewServer(Config{})
		return realDB(t, dsn), simDB(t, srv), srv
	}
	ctx := context.Background()
	same := func(t *testing.T, step string, want, got string, expect string) {
		t.Helper()
		if want != expect {
			t.Fatalf("%s: real MariaDB replied %q, the test expects %q", step, want, expect)
		}
		if got != want {
			t.Fatalf("%s:\n real: %s\n sim:  %s", step, want, got)
		}
	}
	both := func(t *testing.T, step string, r, s querier, query, expect string) {
		t.Helper()
		same(t, step, answer(ctx, r, query), answer(ctx, s, query), expect)
	}

	t.Run("deadlock", func(t *testing.T) {
		real, sim, srv := sides(t)
		ra, rb, sa, sb := pinned(t, real), pinned(t, real), pinned(t, sim), pinned(t, sim)
		both(t, "a takes d1", ra, sa, "SELECT GET_LOCK('d1', 0)", "1")
		both(t, "b takes d2", rb, sb, "SELECT GET_LOCK('d2', 0)", "1")
		realDone, simDone := make(chan string), make(chan string)
		go func() { realDone <- answer(ctx, ra, "SELECT GET_LOCK('d2', 20)") }()
		go func() { simDone <- answer(ctx, sa, "SELECT GET_LOCK('d2', 20)") }()
		waitUntil(t, "the real a waits for d2", func() bool {
			return answer(ctx, rb, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'") == "1"
		})
		waitUntil(t, "the simulated a waits for d2", func() bool {
			rows := srv.Locks()
			return len(rows) == 2 && rows[1].Name == "d2" && len(rows[1].Waiters) == 1
		})
		both(t, "b asks for d1: the cycle", rb, sb, "SELECT GET_LOCK('d1', 20)",
			"ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction")
		both(t, "the victim keeps d2 and releases it", rb, sb, "SELECT RELEASE_LOCK('d2')", "1")
		same(t, "a gets d2", <-realDone, <-simDone, "1")
	})

	t.Run("kill", func(t *testing.T) {
		real, sim, srv := sides(t)
		rh, rw, ro, sh, sw, so := pinned(t, real), pinned(t, real), pinned(t, real), pinned(t, sim), pinned(t, sim), pinned(t, sim)
		both(t, "holder takes job", rh, sh, "SELECT GET_LOCK('job', 0)", "1")
		id := func(c querier) string { return answer(ctx, c, "SELECT CONNECTION_ID()") }
		for _, kill := range []struct{ how, expect string }{
			{"KILL QUERY ", "NULL"},
			{"KILL ", "error: invalid connection"},
		} {
			realDone, simDone := make(chan string), make(chan string)
			realID, simID := id(rw), id(sw)
			go func() { realDone <- answer(ctx, rw, "SELECT GET_LOCK('job', 20)") }()
			go func() { simDone <- answer(ctx, sw, "SELECT GET_LOCK('job', 20)") }()
			waitUntil(t, "the real waiter waits", func() bool {
				return answer(ctx, ro, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'") == "1"
			})
			waitUntil(t, "the simulated waiter waits", func() bool {
				rows := srv.Locks()
				return len(rows) == 1 && len(rows[0].Waiters) == 1
			})
			same(t, kill.how+"of the waiter", answer(ctx, ro, kill.how+realID), answer(ctx, so, kill.how+simID), "")
			same(t, "the waiter's reply after "+kill.how, <-realDone, <-simDone, kill.expect)
			both(t, "the holder still holds", ro, so, "SELECT IS_FREE_LOCK('job')", "0")
		}
	})

	t.Run("client gone while waiting", func(t *testing.T) {
		real, sim, srv := sides(t)
		rh, ro, sh, so := pinned(t, real), pinned(t, real), pinned(t, sim), pinned(t, sim)
		rw, sw := pinned(t, real), pinned(t, sim)
		both(t, "holder takes job", rh, sh, "SELECT GET_LOCK('job', 0)", "1")
		waitCtx, cancel := context.WithCancel(ctx)
		realDone, simDone := make(chan string), make(chan string)
		go func() { realDone <- answer(waitCtx, rw, "SELECT GET_LOCK('job', 30)") }()
		go func() { simDone <- answer(waitCtx, sw, "SELECT GET_LOCK('job', 30)") }()
		realWaiters := func() string {
			return answer(ctx, ro, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'")
		}
		simWaiters := func() string {
			n := 0
			for _, r := range srv.Locks() {
				n += len(r.Waiters)
			}
			return fmt.Sprint(n)
		}
		waitUntil(t, "both waiters wait", func() bool { return realWaiters() == "1" && simWaiters() == "1" })
		cancel() // go-sql-driver closes both connections
		same(t, "the waiters' queries", <-realDone, <-simDone, "error: context canceled")
		waitUntil(t, "both servers withdrew the wait", func() bool { return realWaiters() == "0" && simWaiters() == "0" })
		both(t, "the holder releases", rh, sh, "SELECT RELEASE_LOCK('job')", "1")
		both(t, "nobody holds job", ro, so, "SELECT IS_USED_LOCK('job')", "NULL")
	})

	t.Run("wait_timeout", func(t *testing.T) {
		real, sim, _ := sides(t)
		rh, rw, sh, sw := pinned(t, real), pinned(t, real), pinned(t, sim), pinned(t, sim)
		both(t, "holder shortens wait_timeout", rh, sh, "SET SESSION wait_timeout = 1", "")
		both(t, "holder takes job", rh, sh, "SELECT GET_LOCK('job', 0)", "1")
		both(t, "job is taken", rw, sw, "SELECT GET_LOCK('job', 0)", "0")
		time.Sleep(2 * time.Second) // real servers, real time: 1 s and a margin
		both(t, "the idle holder's session was closed: job is free", rw, sw, "SELECT GET_LOCK('job', 0)", "1")
	})

	t.Run("fenced write", func(t *testing.T) {
		real, sim, _ := sides(t)
		write := func(db *sql.DB, value, version int64) string {
			res, err := db.ExecContext(ctx, "UPDATE fence SET version = version + 1, value = ? WHERE id = 1 AND version = ?", value, version)
			if err != nil {
				return renderErr(err)
			}
			n, err := res.RowsAffected()
			return fmt.Sprintf("%d rows %v", n, err)
		}
		both(t, "read the row", real, sim, "SELECT version, value FROM fence WHERE id = 1", "0 0")
		same(t, "write based on version 0", write(real, 33, 0), write(sim, 33, 0), "1 rows <nil>")
		same(t, "a stale write based on version 0", write(real, 34, 0), write(sim, 34, 0), "0 rows <nil>")
		both(t, "the row after both", real, sim, "SELECT version, value FROM fence WHERE id = 1", "1 33")
	})

	t.Run("pool release on another connection", func(t *testing.T) {
		real, sim, _ := sides(t)
		both(t, "GET_LOCK through the pool", real, sim, "SELECT GET_LOCK('job', 0)", "1")
		rBusy, err1 := real.QueryContext(ctx, "SELECT IS_FREE_LOCK('report')")
		sBusy, err2 := sim.QueryContext(ctx, "SELECT IS_FREE_LOCK('report')")
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		both(t, "RELEASE_LOCK on a second connection", real, sim, "SELECT RELEASE_LOCK('job')", "0")
		rBusy.Close()
		sBusy.Close()
		both(t, "the lock stays held", real, sim, "SELECT IS_FREE_LOCK('job')", "0")
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}
