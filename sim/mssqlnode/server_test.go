package mssqlnode

// The unmodified go-mssqldb driver, through database/sql, against the
// simulated server over net.Pipe, inside a synctest bubble (lock timeouts
// run on virtual time). Each test asserts a documented return code or
// owner rule as the driver reports it.

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
)

// pipeDialer connects the driver to srv over net.Pipe. It is a
// HostDialer, so the driver resolves no name.
type pipeDialer struct {
	srv *Server
	wg  *sync.WaitGroup
}

func (d pipeDialer) HostName() string { return "db1" }

func (d pipeDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		_ = d.srv.Serve(server)
	}()
	return client, nil
}

// open returns a *sql.DB on a fresh server, and a cleanup that closes
// everything and waits for the server's goroutines.
func open(t *testing.T) (*sql.DB, *Server, func()) {
	t.Helper()
	srv := NewServer("db1", nil)
	wg := &sync.WaitGroup{}
	c, err := mssql.NewConnector("sqlserver://sa:x@db1?database=locklab&encrypt=disable&dial+timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	c.Dialer = pipeDialer{srv: srv, wg: wg}
	db := sql.OpenDB(c)
	return db, srv, func() {
		db.Close()
		srv.Stop()
		wg.Wait()
	}
}

const getLock = `DECLARE @r int; EXEC @r = sp_getapplock @Resource = @p1, @LockMode = @p2, @LockOwner = @p3, @LockTimeout = @p4; SELECT @r`

func get(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, res, mode, owner string, timeout int64) int {
	t.Helper()
	var r int
	if err := q.QueryRowContext(context.Background(), getLock, res, mode, owner, timeout).Scan(&r); err != nil {
		t.Fatalf("sp_getapplock %s %s %s: %v", res, mode, owner, err)
	}
	return r
}

func spid(t *testing.T, c *sql.Conn) int {
	t.Helper()
	var n int
	if err := c.QueryRowContext(context.Background(), "SELECT @@SPID").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func conns(t *testing.T, db *sql.DB, n int) []*sql.Conn {
	t.Helper()
	var out []*sql.Conn
	for i := 0; i < n; i++ {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// 0, -1 (timeout 0 and a positive timeout), 1 after waiting, APPLOCK_MODE
// and APPLOCK_TEST, sp_releaseapplock's 0 and its error for a lock not
// held.
func TestDriverSessionLockReturnCodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, _, done := open(t)
		defer done()
		cs := conns(t, db, 2)
		a, b := cs[0], cs[1]
		if sa, sb := spid(t, a), spid(t, b); sa < 51 || sa == sb {
			t.Fatalf("SPIDs %d and %d", sa, sb)
		}
		if r := get(t, a, "job", "Exclusive", "Session", -1); r != 0 {
			t.Fatalf("first sp_getapplock returned %d, want 0", r)
		}
		if r := get(t, b, "job", "Exclusive", "Session", 0); r != -1 {
			t.Fatalf("@LockTimeout 0 on a held lock returned %d, want -1", r)
		}
		start := time.Now()
		if r := get(t, b, "job", "Shared", "Session", 250); r != -1 || time.Since(start) != 250*time.Millisecond {
			t.Fatalf("@LockTimeout 250 returned %d after %v, want -1 after 250ms", r, time.Since(start))
		}
		var mode string
		var test int
		if err := a.QueryRowContext(context.Background(), "SELECT APPLOCK_MODE('public', @p1, 'Session'), APPLOCK_TEST('public', @p1, 'Shared', 'Session')", "job").Scan(&mode, &test); err != nil {
			t.Fatal(err)
		}
		if mode != "Exclusive" || test != 1 {
			t.Fatalf("holder: APPLOCK_MODE %q, APPLOCK_TEST %d", mode, test)
		}
		if err := b.QueryRowContext(context.Background(), "SELECT APPLOCK_TEST('public', @p1, 'Shared', 'Session')", "job").Scan(&test); err != nil || test != 0 {
			t.Fatalf("other session: APPLOCK_TEST %d, %v; want 0", test, err)
		}
		// b waits (-1, for ever); a releases 50 ms later; b gets 1.
		got := make(chan int)
		go func() { got <- get(t, b, "job", "Exclusive", "Session", -1) }()
		time.Sleep(50 * time.Millisecond)
		var rs mssql.ReturnStatus
		if _, err := a.ExecContext(context.Background(), "sp_releaseapplock", sql.Named("Resource", "job"), sql.Named("LockOwner", "Session"), &rs); err != nil || rs != 0 {
			t.Fatalf("sp_releaseapplock by RPC: status %d, %v", rs, err)
		}
		if r := <-got; r != 1 {
			t.Fatalf("the waiter got %d, want 1 (granted after waiting)", r)
		}
		_, err := a.ExecContext(context.Background(), "sp_releaseapplock", sql.Named("Resource", "job"), sql.Named("LockOwner", "Session"), &rs)
		if err == nil || !strings.Contains(err.Error(), "not currently held") || rs != -999 {
			t.Fatalf("releasing a lock not held: status %d, %v; want -999 and an error", rs, err)
		}
		for _, c := range cs {
			c.Close()
		}
	})
}

// Transaction owner: refused outside a transaction (-999 and an error),
// released by COMMIT (database/sql's Commit, a TDS transaction manager
// request).
func TestDriverTransactionOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, srv, done := open(t)
		defer done()
		var r int
		err := db.QueryRowContext(context.Background(), getLock, "t", "Exclusive", "Transaction", 0).Scan(&r)
		if err == nil || !strings.Contains(err.Error(), "without an active transaction") {
			t.Fatalf("Transaction owner outside a transaction: %v", err)
		}
		tx, err := db.BeginTx(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if r := get(t, tx, "t", "Exclusive", "Transaction", 0); r != 0 {
			t.Fatalf("in a transaction: %d", r)
		}
		if len(srv.Locks().Holders("public\x00t")) != 1 {
			t.Fatal("no holder on the server")
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if h := srv.Locks().Holders("public\x00t"); len(h) != 0 {
			t.Fatalf("after COMMIT the lock is held by %v", h)
		}
	})
}

// A session lock taken through the pool stays while the connection sits
// idle, and goes when database/sql hands the connection to the next
// query: go-mssqldb's ResetSession marks that request with the reset flag.
func TestDriverPooledResetFreesSessionLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, srv, done := open(t)
		defer done()
		db.SetMaxOpenConns(1)
		if r := get(t, db, "pool", "Exclusive", "Session", 0); r != 0 {
			t.Fatalf("got %d", r)
		}
		if h := srv.Locks().Holders("public\x00pool"); len(h) != 1 {
			t.Fatalf("idle in the pool, the lock is held by %v; want its session", h)
		}
		var n int
		if err := db.QueryRowContext(context.Background(), "SELECT 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if h := srv.Locks().Holders("public\x00pool"); len(h) != 0 {
			t.Fatalf("after another query on the reset connection, held by %v", h)
		}
	})
}

// -3: two transactions each wait for the other's lock; the one that
// closes the cycle is the victim. KILL ends a session and frees its lock.
func TestDriverDeadlockAndKill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, _, done := open(t)
		defer done()
		cs := conns(t, db, 3)
		var txs []*sql.Tx
		for _, c := range cs[:2] {
			tx, err := c.BeginTx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			txs = append(txs, tx)
		}
		get(t, txs[0], "a", "Exclusive", "Transaction", -1)
		get(t, txs[1], "b", "Exclusive", "Transaction", -1)
		got := make(chan int)
		go func() { got <- get(t, txs[0], "b", "Exclusive", "Transaction", -1) }()
		time.Sleep(10 * time.Millisecond)
		if r := get(t, txs[1], "a", "Exclusive", "Transaction", -1); r != -3 {
			t.Fatalf("the request closing the cycle got %d, want -3", r)
		}
		txs[1].Rollback()
		if r := <-got; r != 1 {
			t.Fatalf("the survivor got %d, want 1", r)
		}
		txs[0].Rollback()

		victim := cs[1]
		get(t, victim, "k", "Exclusive", "Session", 0)
		if _, err := cs[2].ExecContext(context.Background(), "KILL "+strconv.Itoa(spid(t, victim))); err != nil {
			t.Fatal(err)
		}
		if r := get(t, cs[2], "k", "Exclusive", "Session", 0); r != 0 {
			t.Fatalf("after KILL the lock is still held (%d)", r)
		}
		if err := victim.PingContext(context.Background()); err == nil {
			t.Fatal("the killed session's connection still works")
		} else if !errors.Is(err, sql.ErrConnDone) && !strings.Contains(err.Error(), "closed") && !strings.Contains(err.Error(), "EOF") && !errors.Is(err, net.ErrClosed) {
			t.Logf("killed connection: %v", err)
		}
		for _, c := range cs {
			c.Close()
		}
	})
}

// -2: the client cancels a waiting request (an attention).
func TestDriverCancelledWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, srv, done := open(t)
		defer done()
		cs := conns(t, db, 2)
		get(t, cs[0], "c", "Exclusive", "Session", 0)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var r int
		err := cs[1].QueryRowContext(ctx, getLock, "c", "Exclusive", "Session", -1).Scan(&r)
		if err == nil {
			t.Fatalf("a cancelled wait returned %d", r)
		}
		srv.mu.Lock()
		waiting := len(srv.locks.waiting)
		srv.mu.Unlock()
		if waiting != 0 {
			t.Fatal("the cancelled request still waits on the server")
		}
		for _, c := range cs {
			c.Close()
		}
	})
}
