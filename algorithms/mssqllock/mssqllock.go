// Package mssqllock holds SQL Server's application locks, sp_getapplock,
// run through the real, unmodified github.com/microsoft/go-mssqldb driver
// and database/sql against the simulated server of sim/mssqlnode on the
// simulated network (sim/dbnet), backend "mssql". docs/sqlserver.md says
// which SQL Server behaviours are modelled and from which documents.
//
// The protocol (Microsoft, sp_getapplock and sp_releaseapplock):
//
//	acquire:  EXEC @r = sp_getapplock @Resource = name,
//	              @LockMode = 'Exclusive', @LockOwner = owner,
//	              @LockTimeout = t
//	          @r >= 0: held (0 at once, 1 after waiting); -1: timed out
//	          (busy; wait and try again); -3: deadlock victim; -999: error
//	work:     ... the critical section ...
//	release:  EXEC sp_releaseapplock @Resource = name, @LockOwner = owner
//	          (owner Transaction: the COMMIT that ends the transaction)
//
// Owner Session (mssql-applock-session) ties the lock to the server's
// session — the connection. Through a database/sql pool (connection:
// pool) the statements run on whichever pooled connection is free, and
// go-mssqldb resets a connection (sp_reset_connection's reset-connection
// flag) on the first request after the pool hands it out again, which
// frees the session's locks: the lock taken on a connection that went back
// to the pool vanishes when another goroutine's query takes that
// connection. A pinned *sql.Conn held from acquire to release is the fix.
//
// Owner Transaction (mssql-applock-transaction) ties the lock to a
// transaction on one connection (a *sql.Tx): the COMMIT or ROLLBACK ends
// the lock, also a COMMIT of the work done so far in the middle of the
// critical section (commit: before_work).
//
// token_source: table takes a fencing token from a row of the same database,
// as algorithms/mysqllock does: read the row's version v, write v+1 where
// it is still v. The row is data: it survives a restart and a failover.
//
// Either way the server ends the session — KILL, a connection dropped
// after a partition, a crash, a failover to a secondary that never had the
// lock — while the client, not asking, still believes it holds it.
package mssqllock

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/locklab/locklab/algorithms"
)

// Backend is the name of the backend these algorithms need.
const Backend = "mssql"

// Client is one client's access to the database, as the backend hands it
// to an algorithm (algorithms.Conns.Backend): a database/sql pool.
type Client struct {
	DB *sql.DB

	mu     sync.Mutex
	pinned []*sql.Conn
}

// Close closes the pinned connections and the pool (at the end of a run,
// from a goroutine outside the kernel).
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

var timeoutParam = algorithms.Param{Name: "lock_timeout", Expect: "-1 (wait for ever), 0 (answer at once) or a number of milliseconds", Check: func(v string) error {
	if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < -1 {
		return fmt.Errorf("expected -1, 0 or a number of milliseconds")
	}
	return nil
}}

func init() {
	algorithms.Register(algorithms.Info{
		Name:    "mssql-applock-session",
		Summary: "SQL Server application lock through go-mssqldb: sp_getapplock @LockOwner = 'Session', on a pooled *sql.DB or a pinned *sql.Conn",
		Backend: Backend, Fencing: algorithms.FencingBuiltIn, Bubble: true,
		Params: []algorithms.Param{
			{Name: "connection", Expect: "pool or pinned", Check: algorithms.OneOf("pool", "pinned")},
			timeoutParam,
			{Name: algorithms.ParamTokenSource, Expect: "table or none", Check: algorithms.OneOf("table", "none")},
			{Name: "confirm", Expect: "a duration such as 500ms: how often the holder asks APPLOCK_MODE on its pinned connection", Check: func(v string) error {
				if d, err := time.ParseDuration(v); err != nil || d < time.Millisecond || d > time.Hour {
					return fmt.Errorf("expected a duration between 1ms and 1h, such as 500ms")
				}
				return nil
			}},
		},
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return newLock(p, c, "Session", "Exclusive")
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "mssql-applock-transaction",
		Summary: "SQL Server application lock through go-mssqldb: sp_getapplock @LockOwner = 'Transaction' in a *sql.Tx, released by its COMMIT",
		Backend: Backend, Fencing: algorithms.FencingBuiltIn, Bubble: true,
		Params: []algorithms.Param{
			timeoutParam,
			{Name: algorithms.ParamTokenSource, Expect: "table or none", Check: algorithms.OneOf("table", "none")},
			{Name: "commit", Expect: "at_release or before_work", Check: algorithms.OneOf("at_release", "before_work")},
		},
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			return newLock(p, c, "Transaction", "Exclusive")
		},
	})
	algorithms.Register(algorithms.Info{
		Name:    "mssql-applock-rw",
		Summary: "SQL Server reader-writer lock on application locks: Shared for readers, Exclusive for writers, owner Session, pinned connection",
		Backend: Backend, Bubble: true, Primitive: algorithms.PrimitiveReadWrite,
		Params: []algorithms.Param{timeoutParam},
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			mode := "Exclusive"
			switch p.Extra[algorithms.ParamMode] {
			case "read":
				mode = "Shared"
			case "", "write":
			default:
				return nil, fmt.Errorf("mssql-applock-rw: mode: expected read or write, found %q", p.Extra[algorithms.ParamMode])
			}
			return newLock(p, c, "Session", mode)
		},
	})
}

// Lock is one client's application lock.
type Lock struct {
	client  *Client
	name    string
	owner   string // "Session" or "Transaction"
	mode    string
	pooled  bool
	early   bool // commit: before_work
	fence   bool // token_source: table
	timeout int64
	wait    algorithms.WaitPolicy
	conn    *sql.Conn // pinned, from acquire to release
	tx      *sql.Tx   // owner Transaction
	// confirm, when set, is how often a background check asks the
	// server, on the lock's own connection, whether the session still
	// holds the lock (APPLOCK_MODE); an error or NoLock marks the lease
	// lost, and the holder stops acting on it.
	confirm time.Duration
	checks  *confirmation
}

// confirmation is one lease's background check; Release stops it.
type confirmation struct{ stopped bool }

func newLock(p algorithms.Params, c algorithms.Conns, owner, mode string) (algorithms.Lock, error) {
	client, ok := c.Backend.(*Client)
	if !ok || client == nil {
		return nil, fmt.Errorf("the SQL Server application lock needs the %q backend", Backend)
	}
	l := &Lock{client: client, name: p.Key, owner: owner, mode: mode, wait: p.Wait,
		pooled: owner == "Session" && p.Extra["connection"] == "pool", early: p.Extra["commit"] == "before_work",
		fence: p.Extra[algorithms.ParamTokenSource] == "table"}
	if v, ok := p.Extra["confirm"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond {
			return nil, fmt.Errorf("confirm: expected a duration such as 500ms, found %q", v)
		}
		if owner != "Session" || l.pooled {
			return nil, fmt.Errorf("confirm: the check asks on the lock's own session, so it needs owner Session and connection: pinned")
		}
		l.confirm = d
	}
	if v, ok := p.Extra["lock_timeout"]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("lock_timeout: expected -1, 0 or a number of milliseconds, found %q", v)
		}
		l.timeout = n
	}
	return l, nil
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
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryOne runs q and scans its one row into dst, reading the whole
// response before closing it. (database/sql's QueryRow closes the rows
// after the first one: go-mssqldb then cancels what it has not read yet
// with an ATTENTION, or not, depending on which of its goroutines ran
// first — a race in the client that would make a run's trace depend on
// the Go scheduler.)
func queryOne(ctx context.Context, on querier, dst any, q string, args ...any) error {
	rows, err := on.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	got := false
	for rows.Next() {
		if !got {
			err = rows.Scan(dst)
			got = true
		}
	}
	if e := rows.Err(); e != nil && err == nil {
		err = e
	}
	if e := rows.Close(); e != nil && err == nil {
		err = e
	}
	if err == nil && !got {
		err = sql.ErrNoRows
	}
	return err
}

func (l *Lock) on() querier {
	switch {
	case l.tx != nil:
		return l.tx
	case l.conn != nil:
		return l.conn
	}
	return l.client.DB
}

// GetAppLock is the statement the locks send: the return code comes back
// as a row.
const GetAppLock = `DECLARE @r int; EXEC @r = sp_getapplock @Resource = @p1, @LockMode = @p2, @LockOwner = @p3, @LockTimeout = @p4; SELECT @r`

// ReleaseAppLock releases one grant.
const ReleaseAppLock = `DECLARE @r int; EXEC @r = sp_releaseapplock @Resource = @p1, @LockOwner = @p2; SELECT @r`

// Acquire tries sp_getapplock under the wait policy.
func (l *Lock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	return l.wait.Retry(env, func() (*algorithms.Lease, error) { return l.try(env) })
}

func (l *Lock) try(env algorithms.Env) (*algorithms.Lease, error) {
	var err error
	outside(env, func() { err = l.begin(env.Context()) })
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	var code int64
	outside(env, func() {
		err = queryOne(env.Context(), l.on(), &code, GetAppLock, l.name, l.mode, l.owner, l.timeout)
	})
	if err != nil {
		l.end(env, false)
		return nil, err
	}
	switch {
	case code == -1 || code == -3:
		// Timed out (busy) or chosen as a deadlock victim: try again.
		l.end(env, false)
		return nil, algorithms.ErrNotAcquired
	case code < 0:
		l.end(env, false)
		return nil, fmt.Errorf("sp_getapplock returned %d", code)
	}
	var fence int64
	if l.fence {
		if fence, err = l.nextFence(env); err != nil {
			l.end(env, false)
			return nil, err
		}
	}
	if l.early {
		// The unit of work commits before the critical section is done:
		// the Transaction-owned lock goes with it.
		l.end(env, true)
	}
	now := env.Now()
	lease := &algorithms.Lease{Resource: l.name, LockValue: l.name, FencingToken: fence, Start: now, Validity: now.Add(algorithms.NoDeadline)}
	if l.confirm > 0 {
		l.startConfirming(env, lease)
	}
	return lease, nil
}

// startConfirming runs the background check of confirm.
func (l *Lock) startConfirming(env algorithms.Env, lease *algorithms.Lease) {
	c := &confirmation{}
	l.checks = c
	conn, every, name, want := l.conn, l.confirm, l.name, l.mode
	env.Go(func(bg algorithms.Env) {
		for {
			bg.Sleep(every)
			if c.stopped {
				return
			}
			var mode string
			var err error
			outside(bg, func() {
				err = queryOne(bg.Context(), conn, &mode, "SELECT APPLOCK_MODE('public', @p1, 'Session')", name)
			})
			if c.stopped {
				return
			}
			if err != nil || mode != want {
				lease.MarkLost()
				return
			}
		}
	})
}

// begin pins a connection (Session owner, unless pooled) or begins a
// transaction (Transaction owner).
func (l *Lock) begin(ctx context.Context) error {
	var err error
	switch {
	case l.owner == "Transaction":
		l.tx, err = l.client.DB.BeginTx(ctx, nil)
	case !l.pooled && l.conn == nil:
		l.conn, err = l.client.pin(ctx)
	}
	return err
}

// end commits or rolls back the transaction, or hands the pinned
// connection back.
func (l *Lock) end(env algorithms.Env, commit bool) error {
	var err error
	outside(env, func() {
		if l.tx != nil {
			if commit {
				err = l.tx.Commit()
			} else {
				err = l.tx.Rollback()
			}
			l.tx = nil
		}
		if l.conn != nil {
			l.client.unpin(l.conn)
			l.conn = nil
		}
	})
	return err
}

// Release runs sp_releaseapplock, or, for a Transaction owner, commits.
func (l *Lock) Release(env algorithms.Env, lease *algorithms.Lease) error {
	if l.checks != nil {
		l.checks.stopped = true
		l.checks = nil
	}
	if l.owner == "Transaction" {
		if l.tx == nil {
			return nil // committed before the work (commit: before_work)
		}
		return l.end(env, true)
	}
	var code int64
	var err error
	outside(env, func() {
		err = queryOne(env.Context(), l.on(), &code, ReleaseAppLock, l.name, l.owner)
	})
	l.end(env, false)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("sp_releaseapplock returned %d", code)
	}
	return nil
}

// nextFence takes the next fencing token from the fence row: read its
// version v, write v+1 where the version is still v.
func (l *Lock) nextFence(env algorithms.Env) (int64, error) {
	for {
		var v, n int64
		var err error
		outside(env, func() {
			if err = queryOne(env.Context(), l.on(), &v, "SELECT version FROM fence WHERE id = 1"); err != nil {
				return
			}
			var res sql.Result
			res, err = l.exec().ExecContext(env.Context(), "UPDATE fence SET version = version + 1 WHERE id = 1 AND version = @p1", v)
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

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (l *Lock) exec() execer {
	switch {
	case l.tx != nil:
		return l.tx
	case l.conn != nil:
		return l.conn
	}
	return l.client.DB
}
