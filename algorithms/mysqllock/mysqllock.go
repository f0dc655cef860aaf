// Package mysqllock holds the MySQL named lock, GET_LOCK, run through the
// real, unmodified go-sql-driver/mysql and database/sql against the
// simulated servers of sim/mysqlnode on the simulated network
// (sim/dbnet), backend "mysql".
//
// The protocol (MariaDB 10.11 and MySQL 5.7+, "Miscellaneous Functions"):
//
//	acquire:  SELECT GET_LOCK(name, 0)   → 1: held by this session
//	          (0: busy; wait and try again)
//	work:     ... the critical section ...
//	release:  SELECT RELEASE_LOCK(name)  → 0 or NULL: this session held nothing
//
// A named lock belongs to the server's session — the TCP connection — not
// to the client, and not to the transaction. Its known weaknesses follow:
//
//   - through a database/sql pool (*sql.DB), every statement runs on
//     whichever pooled connection is free: another worker of the same
//     service handed the holder's idle connection is granted the lock again
//     (GET_LOCK is re-entrant per session), and the holder's RELEASE_LOCK
//     lands on another connection, returns 0, and leaves the lock with an
//     idle pooled connection (connection: pool). A pinned *sql.Conn held
//     from GET_LOCK to RELEASE_LOCK is the fix (connection: pinned);
//   - the server ends a session it considers idle (wait_timeout) or dead
//     (TCP keepalive) and frees its locks while the client, cut off or
//     paused, still believes it holds: fence the work;
//   - named locks are local to one server: on a multi-primary cluster
//     (Galera, group replication) each node grants the same name.
//
// token_source: table takes a fencing token from a row of the same database:
// read the row's version v, write version v+1 only where it is still v.
package mysqllock

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"

	"github.com/go-sql-driver/mysql"
	"github.com/locklab/locklab/algorithms"
)

// Backend is the name of the backend these algorithms need.
const Backend = "mysql"

// Client is one client's access to the database, as the backend hands it
// to an algorithm (algorithms.Conns.Backend): a database/sql pool, which
// several clients of one service may share.
type Client struct {
	DB *sql.DB
	// Config is the driver configuration DB was opened with (its
	// DialFunc dials the simulated network): locktest makes a
	// DSN of it for a lock that opens its own pool.
	Config *mysql.Config

	mu     sync.Mutex
	pinned []*sql.Conn
}

// Close closes the connections the client's locks pinned and the pool (at
// the end of a run, from a goroutine outside the kernel).
func (c *Client) Close() {
	c.mu.Lock()
	pinned := c.pinned
	c.pinned = nil
	c.mu.Unlock()
	for _, p := range pinned {
		_ = p.Close()
	}
	_ = c.DB.Close()
}

func (c *Client) pin(ctx context.Context) (*sql.Conn, error) {
	conn, err := c.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.pinned = append(c.pinned, conn)
	c.mu.Unlock()
	return conn, nil
}

func (c *Client) unpin(conn *sql.Conn) {
	c.mu.Lock()
	for i, p := range c.pinned {
		if p == conn {
			c.pinned = append(c.pinned[:i], c.pinned[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	_ = conn.Close()
}

func init() {
	algorithms.Register(algorithms.Info{
		Name:    "mysql-get-lock",
		Summary: "MySQL named lock through go-sql-driver/mysql: GET_LOCK(name, 0) polled, RELEASE_LOCK, on a pooled or pinned connection",
		Backend: Backend, Fencing: algorithms.FencingBuiltIn, Bubble: true,
		Params: []algorithms.Param{
			{Name: "connection", Expect: "pool or pinned", Check: algorithms.OneOf("pool", "pinned")},
			{Name: algorithms.ParamTokenSource, Expect: "table or none", Check: algorithms.OneOf("table", "none")},
		},
		New: newLock,
	})
}

// Lock is one client's named lock.
type Lock struct {
	client *Client
	name   string
	pinned bool
	fence  bool
	wait   algorithms.WaitPolicy
	conn   *sql.Conn // the pinned connection, from GET_LOCK to RELEASE_LOCK
}

func newLock(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
	client, ok := c.Backend.(*Client)
	if !ok || client == nil {
		return nil, fmt.Errorf("the MySQL named lock needs the %q backend", Backend)
	}
	return &Lock{client: client, name: p.Key, pinned: p.Extra["connection"] != "pool",
		fence: p.Extra[algorithms.ParamTokenSource] == "table", wait: p.Wait}, nil
}

// outside runs fn — the driver's code — outside the kernel when the Env
// has that door (a simulated process in a bubble), else just calls it.
func outside(env algorithms.Env, fn func()) {
	if o, ok := env.(interface{ Outside(func()) }); ok {
		o.Outside(fn)
		return
	}
	fn()
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// on is where the lock's statements run: the pinned connection, or the
// pool (any free connection).
func (l *Lock) on() querier {
	if l.conn != nil {
		return l.conn
	}
	return l.client.DB
}

func (l *Lock) query(env algorithms.Env, dst any, q string, args ...any) error {
	var err error
	outside(env, func() { err = l.on().QueryRowContext(env.Context(), q, args...).Scan(dst) })
	return err
}

// Acquire polls GET_LOCK under the wait policy.
func (l *Lock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	return l.wait.Retry(env, func() (*algorithms.Lease, error) { return l.try(env) })
}

func (l *Lock) try(env algorithms.Env) (*algorithms.Lease, error) {
	if l.pinned && l.conn == nil {
		var err error
		outside(env, func() { l.conn, err = l.client.pin(env.Context()) })
		if err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
	}
	var got sql.NullInt64
	if err := l.query(env, &got, "SELECT GET_LOCK(?, 0)", l.name); err != nil {
		l.unpin(env)
		return nil, err
	}
	if got.Int64 != 1 {
		l.unpin(env)
		return nil, algorithms.ErrNotAcquired
	}
	now := env.Now()
	lease := &algorithms.Lease{Resource: l.name, LockValue: l.name, Start: now, Validity: now.Add(algorithms.NoDeadline)}
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
// version v, write v+1 where the version is still v.
func (l *Lock) nextFence(env algorithms.Env) (int64, error) {
	for {
		var v int64
		if err := l.query(env, &v, "SELECT version FROM fence WHERE id = 1"); err != nil {
			return 0, err
		}
		var n int64
		var err error
		outside(env, func() {
			var res sql.Result
			res, err = l.on().ExecContext(env.Context(), "UPDATE fence SET version = version + 1 WHERE id = 1 AND version = ?", v)
			if err == nil {
				n, err = res.RowsAffected()
			}
		})
		if err != nil {
			return 0, err
		}
		if n == 1 {
			return v + 1, nil
		}
	}
}

// unpin hands the pinned connection back to the pool.
func (l *Lock) unpin(env algorithms.Env) {
	if l.conn == nil {
		return
	}
	conn := l.conn
	l.conn = nil
	outside(env, func() { l.client.unpin(conn) })
}

// Release runs RELEASE_LOCK. 0 or NULL means the connection it ran on did
// not hold the lock: through a pool, it ran on another connection.
func (l *Lock) Release(env algorithms.Env, lease *algorithms.Lease) error {
	defer l.unpin(env)
	var got sql.NullInt64
	if err := l.query(env, &got, "SELECT RELEASE_LOCK(?)", l.name); err != nil {
		return err
	}
	if got.Int64 != 1 {
		v := "NULL"
		if got.Valid {
			v = strconv.FormatInt(got.Int64, 10)
		}
		return fmt.Errorf("RELEASE_LOCK(%q) returned %s: the connection it ran on did not hold the lock", l.name, v)
	}
	return nil
}
