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
			l := &PoolLock{client: client, name: p.Key, key: AdvisoryKey(p.Key), pin: p.Extra["pin_connection"] == "true", wait: p.Wait}
			if p.Extra["pool"] == "database/sql" {
				if client.DB == nil {
					return nil, fmt.Errorf("pg-advisory-pgxpool: pool database/sql needs the %q backend", Backend)
				}
				return &sqlLock{PoolLock: l}, nil
			}
			return l, nil
		},
	})
}

// PoolLock is one client's advisory lock through its pool.
type PoolLock struct {
	client *Client
	name   string
	key    int64
	pin    bool
	wait   algorithms.WaitPolicy
	held   *pgxpool.Conn // pin_connection: the connection that holds the lock
}

func (l *PoolLock) pool(env algorithms.Env) (*pgxpool.Pool, error) {
	var p *pgxpool.Pool
	var err error
	outside(env, func() { p, err = l.client.Pool() })
	return p, err
}

// lease is the lease of a granted advisory lock: no deadline (the server
// holds it for as long as the session lives), the key as its token.
func (l *PoolLock) lease(env algorithms.Env) *algorithms.Lease {
	now := env.Now()
	return &algorithms.Lease{Resource: l.name, Token: strconv.FormatInt(l.key, 10), Start: now, Validity: now.Add(algorithms.NoDeadline)}
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
				err = pool.QueryRow(env.Context(), "SELECT pg_try_advisory_lock($1)", l.key).Scan(&ok)
				return
			}
			var c *pgxpool.Conn
			if c, err = pool.Acquire(env.Context()); err != nil {
				return
			}
			if err = c.QueryRow(env.Context(), "SELECT pg_try_advisory_lock($1)", l.key).Scan(&ok); err != nil || !ok {
				c.Release()
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
			err = l.held.QueryRow(env.Context(), "SELECT pg_advisory_unlock($1)", l.key).Scan(&ok)
			l.held.Release()
			l.held = nil
			return
		}
		err = pool.QueryRow(env.Context(), "SELECT pg_advisory_unlock($1)", l.key).Scan(&ok)
	})
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("pg_advisory_unlock returned false: the pooled connection it ran on did not hold the lock")
	}
	return nil
}

// sqlLock is the same lock through database/sql (pgx's stdlib driver):
// db.QueryRowContext borrows any pooled connection; pinned, one *sql.Conn
// from db.Conn is held from lock to unlock.
type sqlLock struct {
	*PoolLock
	conn *sql.Conn
}

func (l *sqlLock) db(env algorithms.Env) (*sql.DB, error) {
	var db *sql.DB
	var err error
	outside(env, func() { db, err = l.client.DB() })
	return db, err
}

func (l *sqlLock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	db, err := l.db(env)
	if err != nil {
		return nil, err
	}
	return l.wait.Retry(env, func() (*algorithms.Lease, error) {
		var ok bool
		var err error
		outside(env, func() {
			if !l.pin {
				err = db.QueryRowContext(env.Context(), "SELECT pg_try_advisory_lock($1)", l.key).Scan(&ok)
				return
			}
			var c *sql.Conn
			if c, err = db.Conn(env.Context()); err != nil {
				return
			}
			if err = c.QueryRowContext(env.Context(), "SELECT pg_try_advisory_lock($1)", l.key).Scan(&ok); err != nil || !ok {
				c.Close()
				return
			}
			l.conn = c
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

func (l *sqlLock) Release(env algorithms.Env, lease *algorithms.Lease) error {
	db, err := l.db(env)
	if err != nil {
		return err
	}
	var ok bool
	outside(env, func() {
		if l.conn != nil {
			err = l.conn.QueryRowContext(env.Context(), "SELECT pg_advisory_unlock($1)", l.key).Scan(&ok)
			l.conn.Close() // back to the pool
			l.conn = nil
			return
		}
		err = db.QueryRowContext(env.Context(), "SELECT pg_advisory_unlock($1)", l.key).Scan(&ok)
	})
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("pg_advisory_unlock returned false: the pooled connection it ran on did not hold the lock")
	}
	return nil
}
