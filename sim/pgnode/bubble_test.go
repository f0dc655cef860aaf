package pgnode

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// The first step towards running pgx in the simulation (issue 22, step 2):
// unmodified pgx, its goroutines and timers, and the server run inside a
// testing/synctest bubble, where time is virtual. A pg_advisory_lock wait
// bounded by context.WithTimeout ends after exactly the timeout of virtual
// time (plus pgx's own settling sleep), through pgx's CancelRequest,
// whatever the machine's speed.
func TestPgxInBubbleLockWaitTimesOutInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewServer()
		cancelRequests := func(cfg *pgx.ConnConfig) {
			cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
				return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Hour}
			}
		}
		a := connect(t, srv, pgx.QueryExecModeCacheStatement)
		b := connect(t, srv, pgx.QueryExecModeCacheStatement, cancelRequests)
		execSQL(t, a, "SELECT pg_advisory_lock($1)", int64(1))
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := b.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(1))
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
			t.Fatalf("bounded wait returned %v, want SQLSTATE 57014", err)
		}
		// The timeout, then the 100 ms pgx's CancelRequestContextWatcherHandler
		// sleeps after sending the cancel so that it cannot hit the next
		// query (pgconn.go), before the connection is handed back.
		if waited := time.Since(start); waited != 30*time.Second+100*time.Millisecond {
			t.Fatalf("waited %v of virtual time, want exactly 30.1s", waited)
		}
		execSQL(t, a, "SELECT pg_advisory_unlock($1)", int64(1))
		if !queryBool(t, b, "SELECT pg_try_advisory_lock($1)", int64(1)) {
			t.Fatal("lock not free after the holder's unlock")
		}
	})
}
