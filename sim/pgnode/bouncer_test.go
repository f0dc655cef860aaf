package pgnode

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5"
)

// viaBouncer opens a real pgx connection (simple protocol, as PgBouncer's
// users must before 1.21) to a Bouncer in front of srv, over pipes.
func viaBouncer(t *testing.T, b *Bouncer, wg *sync.WaitGroup) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig("postgres://app@pgbouncer:6432/lab?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) { return []string{host}, nil }
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		client, server := net.Pipe()
		wg.Add(1)
		go func() { defer wg.Done(); _ = b.Serve(server) }()
		return client, nil
	}
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newBouncer(srv *Server, wg *sync.WaitGroup) *Bouncer {
	return &Bouncer{PoolSize: 2, ResetQuery: "DISCARD ALL", Dial: func() (net.Conn, error) {
		client, server := net.Pipe()
		wg.Add(1)
		go func() { defer wg.Done(); _ = srv.Serve(server) }()
		return client, nil
	}}
}

func held(srv *Server) int {
	n := 0
	for _, r := range srv.Locks() {
		if r.Granted {
			n++
		}
	}
	return n
}

// Transaction mode: c1's session lock stays on the server connection
// after its statement, and c2, handed that connection, is granted the
// same lock (reentrant per backend).
func TestBouncerTransactionModeHandsTheLockOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		srv := NewServer()
		b := newBouncer(srv, &wg)
		b.Transaction = true
		c1, c2 := viaBouncer(t, b, &wg), viaBouncer(t, b, &wg)
		if !queryBool(t, c1, "SELECT pg_try_advisory_lock(7)") || !queryBool(t, c2, "SELECT pg_try_advisory_lock(7)") {
			t.Fatalf("the second client was refused; in transaction mode it runs on the holder's backend (server conns %d, locks %+v)", b.ServerConns, srv.Locks())
		}
		if b.ServerConns != 1 {
			t.Fatalf("%d server connections, want 1 (LIFO reuse)", b.ServerConns)
		}
		c1.Close(context.Background())
		c2.Close(context.Background())
		if held(srv) != 1 {
			t.Fatalf("locks %+v, want the lock stranded on the pooled backend", srv.Locks())
		}
		b.Stop()
		wg.Wait()
	})
}

// server_reset_query_always: DISCARD ALL after every transaction frees
// the lock at once — the client that took it no longer holds it.
func TestBouncerResetAlwaysDropsSessionLocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		srv := NewServer()
		b := newBouncer(srv, &wg)
		b.Transaction, b.ResetAlways = true, true
		c1 := viaBouncer(t, b, &wg)
		if !queryBool(t, c1, "SELECT pg_try_advisory_lock(7)") {
			t.Fatal("refused")
		}
		synctest.Wait() // the reset runs while the answer travels
		if held(srv) != 0 {
			t.Fatalf("locks %+v after the reset, want none", srv.Locks())
		}
		c1.Close(context.Background())
		b.Stop()
		wg.Wait()
	})
}

// Session mode: the client keeps its server connection; when it leaves,
// DISCARD ALL releases its session locks before the connection is pooled.
func TestBouncerSessionModeResetsOnDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		srv := NewServer()
		b := newBouncer(srv, &wg)
		c1, c2 := viaBouncer(t, b, &wg), viaBouncer(t, b, &wg)
		if !queryBool(t, c1, "SELECT pg_try_advisory_lock(7)") {
			t.Fatal("refused")
		}
		if queryBool(t, c2, "SELECT pg_try_advisory_lock(7)") {
			t.Fatal("c2 granted c1's lock in session mode")
		}
		c1.Close(context.Background())
		synctest.Wait()
		if held(srv) != 0 {
			t.Fatalf("locks %+v after c1 left, want none (DISCARD ALL)", srv.Locks())
		}
		if !queryBool(t, c2, "SELECT pg_try_advisory_lock(7)") {
			t.Fatal("c2 refused after c1 left")
		}
		c2.Close(context.Background())
		b.Stop()
		wg.Wait()
	})
}

// server_lifetime: a server connection older than the lifetime is closed
// when it comes back to the pool, and its backend's locks go with it.
func TestBouncerServerLifetimeEndsTheStrandedLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		srv := NewServer()
		b := newBouncer(srv, &wg)
		b.Transaction, b.ServerLifetime = true, time.Minute
		c1 := viaBouncer(t, b, &wg)
		queryBool(t, c1, "SELECT pg_try_advisory_lock(7)")
		if held(srv) != 1 {
			t.Fatal("lock not held")
		}
		time.Sleep(2 * time.Minute)
		queryBool(t, c1, "SELECT pg_try_advisory_lock(8)") // released after: too old
		synctest.Wait()
		if held(srv) != 0 {
			t.Fatalf("locks %+v, want none after the old server connection closed", srv.Locks())
		}
		c1.Close(context.Background())
		b.Stop()
		wg.Wait()
	})
}
