package mysqlnode

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Unmodified go-sql-driver/mysql and database/sql, their goroutines and
// timers, and the server run inside a testing/synctest bubble, where time
// is virtual: the waits below last exactly what the protocol says,
// whatever the machine's speed (issue 22, step 4).

func mustAnswer(t testing.TB, q querier, want, query string, args ...any) {
	t.Helper()
	if got := answer(context.Background(), q, query, args...); got != want {
		t.Fatalf("%s %v: got %q, want %q", query, args, got, want)
	}
}

// A GET_LOCK wait bounded by its timeout ends after exactly that timeout
// of virtual time with 0; one whose lock is released first ends at the
// release with 1.
func TestGetLockWaitInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := simDB(t, NewServer(Config{}))
		defer db.Close()
		a, b := pinned(t, db), pinned(t, db)
		defer a.Close()
		defer b.Close()
		mustAnswer(t, a, "1", "SELECT GET_LOCK('job', 10)")

		start := time.Now()
		mustAnswer(t, b, "0", "SELECT GET_LOCK(?, ?)", "job", 2.5)
		if waited := time.Since(start); waited != 2500*time.Millisecond {
			t.Fatalf("bounded wait took %v of virtual time, want exactly 2.5s", waited)
		}

		start = time.Now()
		got := make(chan string)
		go func() { got <- answer(context.Background(), b, "SELECT GET_LOCK('job', 60)") }()
		time.Sleep(7 * time.Second)
		mustAnswer(t, a, "1", "SELECT RELEASE_LOCK('job')")
		if r := <-got; r != "1" {
			t.Fatalf("waiter got %q after the release, want 1", r)
		}
		if waited := time.Since(start); waited != 7*time.Second {
			t.Fatalf("granted wait took %v of virtual time, want exactly 7s (the release)", waited)
		}
		mustAnswer(t, a, "2", "SELECT IS_USED_LOCK('job')")
	})
}

// The database/sql pool story (issue 22): GET_LOCK and RELEASE_LOCK sent
// through *sql.DB run on whatever pooled connection is free. Here another
// query of the same service holds the first connection when the release
// is sent, so it opens a second: RELEASE_LOCK returns 0, and the lock
// stays with the first connection, now idle in the pool, so another
// client cannot take it. A pinned *sql.Conn runs both on one session.
func TestPoolReleaseLandsOnAnotherConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewServer(Config{})
		service, other := simDB(t, srv), simDB(t, srv)
		defer service.Close()
		defer other.Close()
		ctx := context.Background()

		mustAnswer(t, service, "1", "SELECT GET_LOCK('job', 0)") // connection 1, back to the pool
		busy, err := service.QueryContext(ctx, "SELECT IS_FREE_LOCK('report')")
		if err != nil { // connection 1 again, held until busy is closed
			t.Fatal(err)
		}
		mustAnswer(t, service, "0", "SELECT RELEASE_LOCK('job')") // connection 2: not the holder
		busy.Close()
		mustAnswer(t, service, "1", "SELECT IS_USED_LOCK('job')") // stranded with idle connection 1
		mustAnswer(t, other, "0", "SELECT GET_LOCK('job', 0)")
		if rows := srv.Locks(); len(rows) != 1 || rows[0].Owner != 1 {
			t.Fatalf("lock table %+v, want job held by session 1", rows)
		}
	})
}

func TestPinnedConnReleasesItsOwnLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewServer(Config{})
		service, other := simDB(t, srv), simDB(t, srv)
		defer service.Close()
		defer other.Close()
		ctx := context.Background()

		conn, err := service.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mustAnswer(t, conn, "1", "SELECT GET_LOCK('job', 0)")
		busy, err := service.QueryContext(ctx, "SELECT IS_FREE_LOCK('report')")
		if err != nil {
			t.Fatal(err)
		}
		mustAnswer(t, conn, "1", "SELECT RELEASE_LOCK('job')")
		busy.Close()
		conn.Close()
		mustAnswer(t, other, "1", "SELECT GET_LOCK('job', 0)")
	})
}

// wait_timeout: a session idle that long is closed by the server, which
// frees its locks at that instant, and the client learns it only at its
// next statement.
func TestWaitTimeoutClosesIdleSessionAndFreesItsLocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewServer(Config{WaitTimeout: 8 * time.Hour})
		db := simDB(t, srv)
		defer db.Close()
		holder, waiter := pinned(t, db), pinned(t, db)
		defer waiter.Close()
		mustAnswer(t, holder, "28800", "SELECT @@wait_timeout")
		mustAnswer(t, holder, "", "SET SESSION wait_timeout = 5")
		mustAnswer(t, holder, "1", "SELECT GET_LOCK('job', 0)")
		start := time.Now()

		time.Sleep(5*time.Second - time.Millisecond)
		synctest.Wait()
		mustAnswer(t, waiter, "0", "SELECT GET_LOCK('job', 0)")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		mustAnswer(t, waiter, "1", "SELECT GET_LOCK('job', 0)")
		if idle := time.Since(start); idle != 5*time.Second {
			t.Fatalf("freed after %v idle, want 5s", idle)
		}
		if _, err := holder.ExecContext(context.Background(), "SELECT RELEASE_LOCK('job')"); err == nil {
			t.Fatal("the holder's session was closed, but its next statement succeeded")
		}
		holder.Close()
	})
}

// Two sessions each holding the lock the other asks for: the request that
// closes the cycle fails with ER_LOCK_DEADLOCK at once; the other waits
// on, and gets its lock when the victim lets go.
func TestGetLockDeadlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := simDB(t, NewServer(Config{}))
		defer db.Close()
		a, b := pinned(t, db), pinned(t, db)
		defer a.Close()
		defer b.Close()
		mustAnswer(t, a, "1", "SELECT GET_LOCK('d1', 0)")
		mustAnswer(t, b, "1", "SELECT GET_LOCK('d2', 0)")
		got := make(chan string)
		go func() { got <- answer(context.Background(), a, "SELECT GET_LOCK('d2', 5)") }()
		synctest.Wait()
		mustAnswer(t, b, "ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction", "SELECT GET_LOCK('d1', 5)")
		mustAnswer(t, b, "1", "SELECT RELEASE_LOCK('d2')")
		if r := <-got; r != "1" {
			t.Fatalf("the other waiter got %q, want 1", r)
		}
	})
}

// go-sql-driver closes the connection when the context of a waiting
// query ends; the server withdraws the wait at that instant, so the
// dead session is never handed the lock.
func TestWaitOfAGoneClientIsWithdrawn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewServer(Config{})
		db := simDB(t, srv)
		defer db.Close()
		holder, waiter := pinned(t, db), pinned(t, db)
		defer holder.Close()
		mustAnswer(t, holder, "1", "SELECT GET_LOCK('job', 0)")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if got := answer(ctx, waiter, "SELECT GET_LOCK('job', 60)"); got != "error: context deadline exceeded" {
			t.Fatalf("the waiter's query ended with %q, want its context's deadline", got)
		}
		waiter.Close()
		synctest.Wait()
		if rows := srv.Locks(); len(rows) != 1 || len(rows[0].Waiters) != 0 {
			t.Fatalf("lock table %+v: the gone client still waits", rows)
		}
		mustAnswer(t, holder, "1", "SELECT RELEASE_LOCK('job')")
		if rows := srv.Locks(); len(rows) != 0 {
			t.Fatalf("lock table %+v after the release, want empty", rows)
		}
	})
}

// A GET_LOCK deadline and the holder's wait_timeout due at the same
// instant happen in one fixed order, on every run: the wait ends first
// (0), then the idle holder's session is closed and the lock is free.
// Separate timers would race here.
func TestSameInstantDeadlineAndWaitTimeoutInFixedOrder(t *testing.T) {
	for run := 0; run < 20; run++ {
		synctest.Test(t, func(t *testing.T) {
			srv := NewServer(Config{})
			db := simDB(t, srv)
			defer db.Close()
			holder, waiter := pinned(t, db), pinned(t, db)
			defer waiter.Close()
			mustAnswer(t, holder, "", "SET SESSION wait_timeout = 5")
			mustAnswer(t, holder, "1", "SELECT GET_LOCK('job', 0)")
			start := time.Now()
			mustAnswer(t, waiter, "0", "SELECT GET_LOCK('job', 5)")
			if d := time.Since(start); d != 5*time.Second {
				t.Fatalf("wait took %v, want 5s", d)
			}
			synctest.Wait()
			mustAnswer(t, waiter, "NULL", "SELECT IS_USED_LOCK('job')")
			holder.Close()
		})
	}
}
