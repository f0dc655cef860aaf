package pglock

// pg-advisory-pgxpool: the session advisory lock taken through a
// connection pool (pgxpool), the way an application that already holds a
// *pgxpool.Pool writes it:
//
//	pool.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", k)   // one pooled connection
//	... the critical section ...
//	pool.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", k)     // maybe another one
//
// Between the two statements the connection that holds the lock sits idle
// in the pool, and the pool may close it: pgxpool's health check closes a
// connection idle longer than MaxConnIdleTime (and one older than
// MaxConnLifetime; database/sql's cleaner does the same after
// SetConnMaxIdleTime, with pool: database/sql). Postgres then ends the backend and frees its lock
// while the application still believes it holds it — and its unlock runs
// on another connection and returns false. pin_connection: true is the
// fix: acquire one *pgxpool.Conn and hold it from lock to unlock.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/locklab/locklab/algorithms"
)

var (
	pinParam  = algorithms.Param{Name: "pin_connection", Expect: "true or false", Check: algorithms.BoolParam}
	poolParam = algorithms.Param{Name: "pool", Expect: "pgxpool or database/sql", Check: algorithms.OneOf("pgxpool", "database/sql")}
)

func init() {
	algorithms.Register(algorithms.Info{
		Name:    "pg-advisory-pgxpool",
		Summary: "Postgres session advisory lock through a pgxpool.Pool: lock and unlock on whatever pooled connection is free",
		Backend: Backend, Bubble: true,
		Params: []algorithms.Param{pinParam, poolParam},
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			client, ok := c.Backend.(*Client)
			if !ok || client == nil || client.Pool == nil {
				return nil, fmt.Errorf("pg-advisory-pgxpool needs the %q backend", Backend)
			}
			l := &PoolLock{client: client, name: p.Key, key: AdvisoryKey(p.Key), pin: p.Extra["pin_connection"] == "true", wait: p.Wait, open: openPgxpool}
			if p.Extra["pool"] == "database/sql" {
				if client.DB == nil {
					return nil, fmt.Errorf("pg-advisory-pgxpool: pool database/sql needs the %q backend", Backend)
				}
				l.open = openSQLDB
			}
			return l, nil
		},
	})
}

// PoolLock is one client's advisory lock through its pool: pgxpool's, or
// database/sql's through pgx's stdlib driver. Unpinned, each statement
// borrows whichever connection is free; pinned, one connection is held
// from lock to unlock.
type PoolLock struct {
	client *Client
	name   string
	key    int64
	pin    bool
	wait   algorithms.WaitPolicy
	open   func(*Client) (connPool, error)
	held   pooledConn // pin_connection: the connection that holds the lock
}

// connPool is what the lock asks of a pool: a statement on any free
// connection (pool.QueryRow, db.QueryRowContext), or one connection to
// keep (pool.Acquire, db.Conn).
type connPool interface {
	queryBool(ctx context.Context, query string, key int64) (bool, error)
	pin(ctx context.Context) (pooledConn, error)
}

// pooledConn is one connection taken from the pool; release gives it back
// (pgxpool.Conn.Release, sql.Conn.Close).
type pooledConn interface {
	queryBool(ctx context.Context, query string, key int64) (bool, error)
	release()
}

func (l *PoolLock) pool(env algorithms.Env) (connPool, error) {
	var p connPool
	var err error
	outside(env, func() { p, err = l.open(l.client) })
	return p, err
}

// lease is the lease of a granted advisory lock: no deadline (the server
// holds it for as long as the session lives), the key as its token.
func (l *PoolLock) lease(env algorithms.Env) *algorithms.Lease {
	now := env.Now()
	return &algorithms.Lease{Resource: l.name, LockValue: strconv.FormatInt(l.key, 10), Start: now, Validity: now.Add(algorithms.NoDeadline)}
}

// Acquire polls pg_try_advisory_lock under the wait policy.
func (l *PoolLock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	pool, err := l.pool(env)
	if err != nil {
		return nil, err
	}
	return l.wait.Retry(env, func() (*algorithms.Lease, error) {
		var ok bool
		var err error
		outside(env, func() {
			if !l.pin {
				ok, err = pool.queryBool(env.Context(), "SELECT pg_try_advisory_lock($1)", l.key)
				return
			}
			var c pooledConn
			if c, err = pool.pin(env.Context()); err != nil {
				return
			}
			if ok, err = c.queryBool(env.Context(), "SELECT pg_try_advisory_lock($1)", l.key); err != nil || !ok {
				c.release()
				return
			}
			l.held = c
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, algorithms.ErrNotAcquired
		}
		return l.lease(env), nil
	})
}

// Release unlocks on the pinned connection, or on whichever the pool
// hands out.
func (l *PoolLock) Release(env algorithms.Env, lease *algorithms.Lease) error {
	pool, err := l.pool(env)
	if err != nil {
		return err
	}
	var ok bool
	outside(env, func() {
		if l.held != nil {
			ok, err = l.held.queryBool(env.Context(), "SELECT pg_advisory_unlock($1)", l.key)
			l.held.release() // back to the pool
			l.held = nil
			return
		}
		ok, err = pool.queryBool(env.Context(), "SELECT pg_advisory_unlock($1)", l.key)
	})
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("pg_advisory_unlock returned false: the pooled connection it ran on did not hold the lock")
	}
	return nil
}

// pgxpool: QueryRow borrows a connection for the statement; Acquire keeps one.
type pgxPool struct{ p *pgxpool.Pool }
type pgxConn struct{ c *pgxpool.Conn }

func openPgxpool(c *Client) (connPool, error) {
	p, err := c.Pool()
	if err != nil {
		return nil, err
	}
	return pgxPool{p}, nil
}

func (p pgxPool) queryBool(ctx context.Context, query string, key int64) (ok bool, err error) {
	err = p.p.QueryRow(ctx, query, key).Scan(&ok)
	return ok, err
}

func (p pgxPool) pin(ctx context.Context) (pooledConn, error) {
	c, err := p.p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return pgxConn{c}, nil
}

func (c pgxConn) queryBool(ctx context.Context, query string, key int64) (ok bool, err error) {
	err = c.c.QueryRow(ctx, query, key).Scan(&ok)
	return ok, err
}

func (c pgxConn) release() { c.c.Release() }

// database/sql: QueryRowContext borrows any pooled connection; db.Conn
// keeps one until its Close.
type sqlDB struct{ db *sql.DB }
type sqlConn struct{ c *sql.Conn }

func openSQLDB(c *Client) (connPool, error) {
	db, err := c.DB()
	if err != nil {
		return nil, err
	}
	return sqlDB{db}, nil
}

func (d sqlDB) queryBool(ctx context.Context, query string, key int64) (ok bool, err error) {
	err = d.db.QueryRowContext(ctx, query, key).Scan(&ok)
	return ok, err
}

func (d sqlDB) pin(ctx context.Context) (pooledConn, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return sqlConn{c}, nil
}

func (c sqlConn) queryBool(ctx context.Context, query string, key int64) (ok bool, err error) {
	err = c.c.QueryRowContext(ctx, query, key).Scan(&ok)
	return ok, err
}

func (c sqlConn) release() { c.c.Close() }
