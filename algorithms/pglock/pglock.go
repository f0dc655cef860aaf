// Package pglock holds the Postgres advisory locks, run through the real,
// unmodified pgx driver against the simulated servers of sim/pgnode on
// the simulated network (sim/dbnet), backend "postgres".
//
// The protocol (PG15 manual, 9.27.10 and 13.3.5):
//
//	acquire:  SELECT pg_try_advisory_lock(k)     → true: held by this session
//	          (false: busy; wait and try again)
//	work:     ... the critical section ...
//	release:  SELECT pg_advisory_unlock(k)       → false: this session held nothing
//
// A session lock belongs to the server's backend — the TCP connection —
// not to the client: it lasts until unlocked or until that backend ends.
// Its known weaknesses follow from that:
//
//   - behind a pooler in transaction mode (PgBouncer), consecutive
//     statements of one client run on different backends: a second client
//     handed the holder's backend is granted the lock again (advisory
//     locks are reentrant per session), and the holder's unlock lands on
//     another backend, returns false, and leaves the lock stranded on a
//     pooled connection (pgbouncer#102, authentik#23876);
//   - the server ends a silent client's backend only when TCP keepalive
//     gives up, and then frees its locks to the next client while the
//     first, cut off, still believes it holds (no lease deadline tells it);
//   - advisory locks are not replicated: a promoted standby has none.
//
// The transaction-scoped variant (pg-advisory-xact) holds the lock in an
// open transaction (BEGIN; pg_try_advisory_xact_lock(k) ... COMMIT), which
// a pooler keeps on one backend from BEGIN to COMMIT: the fix for pooling.
// token_source: table takes a fencing token from a row of the same database
// (read the row's version, write version+1 only if it is still below),
// which the protected resource compares on every write.
package pglock

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/locklab/locklab/algorithms"
)

// Backend is the name of the backend these algorithms need.
const Backend = "postgres"

// Client is one client host's access to the database, as the backend
// hands it to an algorithm (algorithms.Conns.Backend).
type Client struct {
	// Config returns a fresh pgx configuration that dials the database
	// (or its pooler) over the simulated network from this client's host.
	Config func() *pgx.ConnConfig
	// Pool returns the client's pgxpool.Pool, made on first use with the
	// scenario's pool settings and closed when the run ends. Call it
	// outside the kernel.
	Pool func() (*pgxpool.Pool, error)
	// DB is the same as a database/sql pool over pgx's stdlib driver.
	DB func() (*sql.DB, error)
}

var fencingParam = algorithms.Param{Name: algorithms.ParamTokenSource, Expect: "table or none", Check: algorithms.OneOf("table", "none")}

func init() {
	algorithms.Register(algorithms.Info{
		Name:    "pg-advisory-session",
		Summary: "Postgres session advisory lock through pgx: pg_try_advisory_lock polled, pg_advisory_unlock",
		Backend: Backend, Fencing: algorithms.FencingBuiltIn, Bubble: true,
		Params: []algorithms.Param{fencingParam},
		New:    func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) { return newLock(p, c, false) },
	})
	algorithms.Register(algorithms.Info{
		Name:    "pg-advisory-xact",
		Summary: "Postgres transaction advisory lock through pgx: BEGIN; pg_try_advisory_xact_lock ... COMMIT",
		Backend: Backend, Fencing: algorithms.FencingBuiltIn, Bubble: true,
		Params: []algorithms.Param{fencingParam},
		New:    func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) { return newLock(p, c, true) },
	})
}

// AdvisoryKey is the bigint key a lock name maps to (FNV-1a, 32 bits, so
// the trace stays readable; DistributedLock hashes names the same way).
func AdvisoryKey(name string) int64 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int64(h.Sum32())
}

// Lock is one client's advisory lock on one connection.
type Lock struct {
	client *Client
	name   string
	key    int64
	xact   bool
	fence  bool
	wait   algorithms.WaitPolicy
	conn   *pgx.Conn
}

func newLock(p algorithms.Params, c algorithms.Conns, xact bool) (algorithms.Lock, error) {
	client, ok := c.Backend.(*Client)
	if !ok || client == nil {
		return nil, fmt.Errorf("the Postgres advisory locks need the %q backend", Backend)
	}
	return &Lock{client: client, name: p.Key, key: AdvisoryKey(p.Key), xact: xact, fence: p.Extra[algorithms.ParamTokenSource] == "table", wait: p.Wait}, nil
}

// outside runs fn — pgx's code — outside the kernel when the Env has that
// door (a simulated process in a bubble), else just calls it.
func outside(env algorithms.Env, fn func()) {
	if o, ok := env.(interface{ Outside(func()) }); ok {
		o.Outside(fn)
		return
	}
	fn()
}

// session returns the client's connection, dialling it on first use or
// after the last one failed.
func (l *Lock) session(env algorithms.Env) (*pgx.Conn, error) {
	if l.conn != nil && !l.conn.IsClosed() {
		return l.conn, nil
	}
	var err error
	outside(env, func() { l.conn, err = pgx.ConnectConfig(env.Context(), l.client.Config()) })
	if err != nil {
		l.conn = nil
		return nil, fmt.Errorf("connect: %w", err)
	}
	return l.conn, nil
}

// query runs one statement that returns one value.
func (l *Lock) query(env algorithms.Env, dst any, sql string, args ...any) error {
	conn, err := l.session(env)
	if err != nil {
		return err
	}
	outside(env, func() { err = conn.QueryRow(env.Context(), sql, args...).Scan(dst) })
	return err
}

// exec runs one statement and returns its command tag.
func (l *Lock) exec(env algorithms.Env, sql string, args ...any) (string, error) {
	conn, err := l.session(env)
	if err != nil {
		return "", err
	}
	var tag string
	outside(env, func() {
		t, e := conn.Exec(env.Context(), sql, args...)
		tag, err = t.String(), e
	})
	return tag, err
}

// Acquire polls the lock under the wait policy.
func (l *Lock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	return l.wait.Retry(env, func() (*algorithms.Lease, error) { return l.try(env) })
}

// try is one attempt: the session lock, or a transaction holding the
// transaction lock (rolled back when the lock is busy).
func (l *Lock) try(env algorithms.Env) (*algorithms.Lease, error) {
	var ok bool
	if l.xact {
		if _, err := l.exec(env, "BEGIN"); err != nil {
			return nil, err
		}
		if err := l.query(env, &ok, "SELECT pg_try_advisory_xact_lock($1)", l.key); err != nil {
			return nil, err
		}
		if !ok {
			if _, err := l.exec(env, "ROLLBACK"); err != nil {
				return nil, err
			}
			return nil, algorithms.ErrNotAcquired
		}
	} else {
		if err := l.query(env, &ok, "SELECT pg_try_advisory_lock($1)", l.key); err != nil {
			return nil, err
		}
		if !ok {
			return nil, algorithms.ErrNotAcquired
		}
	}
	now := env.Now()
	lease := &algorithms.Lease{Resource: l.name, LockValue: strconv.FormatInt(l.key, 10), Start: now, Validity: now.Add(algorithms.NoDeadline)}
	if l.fence {
		f, err := l.nextFence(env)
		if err != nil {
			return nil, err
		}
		lease.FencingToken = f
	}
	return lease, nil
}

// nextFence takes the next fencing token from the fence row: read its
// version v, write v+1 where the version is still below v+1. Only a
// holder writes it, so the write succeeds unless another holder took a
// token in between — a sign the lock is not exclusive, and a retry.
func (l *Lock) nextFence(env algorithms.Env) (int64, error) {
	for {
		var v int64
		if err := l.query(env, &v, "SELECT token FROM fence"); err != nil {
			return 0, err
		}
		tag, err := l.exec(env, "UPDATE fence SET token = $1 WHERE token < $1", v+1)
		if err != nil {
			return 0, err
		}
		if tag == "UPDATE 1" {
			return v + 1, nil
		}
	}
}

// Release unlocks (session lock) or commits (transaction lock). An
// unlock that returns false means this connection's backend did not hold
// the lock: under a transaction-mode pooler, it ran on another backend.
func (l *Lock) Release(env algorithms.Env, lease *algorithms.Lease) error {
	if l.xact {
		_, err := l.exec(env, "COMMIT")
		return err
	}
	var ok bool
	if err := l.query(env, &ok, "SELECT pg_advisory_unlock($1)", l.key); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("pg_advisory_unlock(%d) returned false: the backend it ran on did not hold the lock", l.key)
	}
	return nil
}

// Close ends the client's connection (its backend's session locks go
// with it).
func (l *Lock) Close(env algorithms.Env) {
	if l.conn != nil {
		outside(env, func() { _ = l.conn.Close(context.Background()) })
	}
}
