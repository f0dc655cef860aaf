package locktest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
)

// getAppLock calls sp_getapplock as go-mssqldb's stored-procedure path
// sends it (an RPC by name, the return code as mssql.ReturnStatus), on
// whatever runs it: the pool or a pinned connection.
func getAppLock(ctx context.Context, exec func(context.Context, string, ...any) (sql.Result, error)) error {
	var rs mssql.ReturnStatus
	if _, err := exec(ctx, "sp_getapplock", sql.Named("Resource", "job"), sql.Named("LockMode", "Exclusive"),
		sql.Named("LockOwner", "Session"), sql.Named("LockTimeout", int64(0)), &rs); err != nil {
		return err
	}
	switch {
	case rs == -1:
		return errBusy
	case rs < 0:
		return fmt.Errorf("sp_getapplock returned %d", rs)
	}
	return nil
}

func releaseAppLock(ctx context.Context, exec func(context.Context, string, ...any) (sql.Result, error)) error {
	var rs mssql.ReturnStatus
	_, err := exec(ctx, "sp_releaseapplock", sql.Named("Resource", "job"), sql.Named("LockOwner", "Session"), &rs)
	return err
}

// appLockPool is the pool bug on SQL Server: sp_getapplock through the
// *sql.DB; the connection goes back to the pool holding the lock, and the
// next goroutine's call resets it.
func appLockPool(db *sql.DB) Lock {
	return Funcs{
		LockFunc:   func(ctx context.Context) error { return getAppLock(ctx, db.ExecContext) },
		UnlockFunc: func(ctx context.Context) error { return releaseAppLock(ctx, db.ExecContext) },
	}
}

// appLockPinned keeps one *sql.Conn from sp_getapplock to
// sp_releaseapplock.
func appLockPinned(db *sql.DB) Lock {
	var conn *sql.Conn
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			c, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			if err := getAppLock(ctx, c.ExecContext); err != nil {
				c.Close()
				return err
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
			return releaseAppLock(ctx, c.ExecContext)
		},
	}
}

// RunSQL with go-mssqldb: the Session-owned applock through the pool is
// flagged for mutual exclusion; pinned, it passes the same class.
func TestRunSQLServer(t *testing.T) {
	got := observeFindings(t)
	RunSQL(t, DriverSQLServer, appLockPool, Options{TTL: 2 * time.Second, Classes: []Class{Pause}, Expect: Expect{Pause: MutualExclusion | Resource}})
	if f := got[Pause]; f.prop&MutualExclusion == 0 {
		t.Fatalf("pool: not flagged for mutual exclusion: %s in %d runs", f.prop, f.runs)
	}
	RunSQL(t, DriverSQLServer, appLockPinned, Options{TTL: 2 * time.Second, Classes: []Class{Pause}})
	if f := got[Pause]; f.prop != Safe {
		t.Fatalf("pinned: %s, want safe", f.prop.found())
	}
}
