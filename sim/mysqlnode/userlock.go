// Package mysqlnode is the simulated MySQL server of issue 22: the
// user-level lock functions (GET_LOCK and its family) and a fencing row,
// spoken over the MySQL wire protocol by dolthub/vitess's server side, so
// that the unmodified go-sql-driver/mysql talks to it over any net.Conn.
//
// This file is the user-level lock table, a pure state machine: time is
// an argument, nothing here sleeps or reads a clock, so the server can run
// on a simulation's virtual time and the table can be tested alone.
//
// Semantics follow MariaDB 10.11 (sql/item_func.cc, the "User-level
// locks" section, on top of the metadata locking subsystem, sql/mdl.cc),
// and are settled by TestDifferentialMySQL against Debian's mariadbd:
//   - a session may hold several named locks at once (MariaDB 10.0.2,
//     MySQL 5.7), and GET_LOCK is re-entrant: each GET_LOCK of a name the
//     session holds adds one level, and the lock is free again only when
//     RELEASE_LOCK was called as many times;
//   - names are compared byte for byte (case-sensitive in MariaDB, unlike
//     MySQL 5.7+ which lower-cases them);
//   - a request for a lock held by another session waits in FIFO order
//     until the holder lets go or its deadline passes;
//   - a request that would close a cycle of sessions each waiting for a
//     lock the next holds fails at once with a deadlock (MDL's deadlock
//     detector; the requester is the victim, and keeps what it holds);
//   - the end of a session releases everything it holds and withdraws
//     its wait.
package mysqlnode

import (
	"sort"
	"time"
)

// Session names one client connection by its connection id, the number
// CONNECTION_ID() and IS_USED_LOCK return.
type Session uint32

// Outcome is what a GET_LOCK request gets at once.
type Outcome int

const (
	Granted  Outcome = iota // GET_LOCK returns 1
	TimedOut                // no wait allowed and the lock is taken: 0
	Waiting                 // queued until a release or its deadline
	Deadlock                // ER_LOCK_DEADLOCK
)

// Waiter is a queued GET_LOCK.
type Waiter struct {
	Session  Session
	Name     string
	Deadline time.Time
}

type userLock struct {
	owner Session
	count int // re-entrant levels held by owner
	queue []Waiter
}

// Table is the user-level lock table of one server.
type Table struct {
	locks   map[string]*userLock
	waiting map[Session]string // the name each waiting session waits for
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{locks: map[string]*userLock{}, waiting: map[Session]string{}}
}

// Acquire is GET_LOCK(name, timeout) by s at time now. A timeout of zero
// or less never waits. On Waiting the request is queued with deadline
// now+timeout; a later Release, ReleaseAll or EndSession grants it, or
// Expire ends it.
func (t *Table) Acquire(s Session, name string, now time.Time, timeout time.Duration) Outcome {
	l := t.locks[name]
	switch {
	case l == nil:
		t.locks[name] = &userLock{owner: s, count: 1}
		return Granted
	case l.owner == s:
		l.count++
		return Granted
	case timeout <= 0:
		return TimedOut
	case t.closesCycle(s, l.owner):
		return Deadlock
	}
	l.queue = append(l.queue, Waiter{Session: s, Name: name, Deadline: now.Add(timeout)})
	t.waiting[s] = name
	return Waiting
}

// closesCycle reports whether s waiting for a lock held by owner would
// close a cycle in the wait-for graph: owner waits for a lock whose
// holder waits ... for a lock s holds.
func (t *Table) closesCycle(s, owner Session) bool {
	for seen := 0; seen <= len(t.waiting); seen++ {
		if owner == s {
			return true
		}
		name, ok := t.waiting[owner]
		if !ok {
			return false
		}
		owner = t.locks[name].owner
	}
	return false
}

// Release is RELEASE_LOCK(name) by s: 1 when s held it (one level is
// released), 0 when another session holds it, and held=false (SQL NULL)
// when nobody does. grants lists the waiter the release let in, if any.
func (t *Table) Release(s Session, name string) (released, exists bool, grants []Waiter) {
	l := t.locks[name]
	if l == nil {
		return false, false, nil
	}
	if l.owner != s {
		return false, true, nil
	}
	l.count--
	if l.count == 0 {
		grants = t.handOver(name, l)
	}
	return true, true, grants
}

// handOver gives a freed lock to the first waiter, or drops it.
func (t *Table) handOver(name string, l *userLock) []Waiter {
	if len(l.queue) == 0 {
		delete(t.locks, name)
		return nil
	}
	w := l.queue[0]
	l.queue = l.queue[1:]
	l.owner, l.count = w.Session, 1
	delete(t.waiting, w.Session)
	return []Waiter{w}
}

// ReleaseAll is RELEASE_ALL_LOCKS() by s: it frees every lock s holds and
// returns the number of levels released (a lock taken twice counts two).
func (t *Table) ReleaseAll(s Session) (int, []Waiter) {
	n := 0
	var grants []Waiter
	for _, name := range t.names() {
		l := t.locks[name]
		if l.owner != s {
			continue
		}
		n += l.count
		l.count = 0
		grants = append(grants, t.handOver(name, l)...)
	}
	return n, grants
}

// CancelWait withdraws s's queued request, if any (its statement ended
// without the lock: a timeout, a killed query, a lost session).
func (t *Table) CancelWait(s Session) bool {
	name, ok := t.waiting[s]
	if !ok {
		return false
	}
	delete(t.waiting, s)
	l := t.locks[name]
	kept := l.queue[:0]
	for _, w := range l.queue {
		if w.Session != s {
			kept = append(kept, w)
		}
	}
	l.queue = kept
	return true
}

// EndSession is the session's connection ending: its wait is withdrawn
// and every lock it holds released (MDL releases the session's locks at
// THD cleanup).
func (t *Table) EndSession(s Session) []Waiter {
	t.CancelWait(s)
	_, grants := t.ReleaseAll(s)
	return grants
}

// Expire ends the waits whose deadline is at or before now (GET_LOCK
// returns 0), in deadline order, then by session.
func (t *Table) Expire(now time.Time) []Waiter {
	var out []Waiter
	for _, name := range t.names() {
		for _, w := range t.locks[name].queue {
			if !w.Deadline.After(now) {
				out = append(out, w)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Deadline.Equal(out[j].Deadline) {
			return out[i].Deadline.Before(out[j].Deadline)
		}
		return out[i].Session < out[j].Session
	})
	for _, w := range out {
		t.CancelWait(w.Session)
	}
	return out
}

// NextDeadline is the earliest deadline of a queued request.
func (t *Table) NextDeadline() (time.Time, bool) {
	var next time.Time
	found := false
	for _, l := range t.locks {
		for _, w := range l.queue {
			if !found || w.Deadline.Before(next) {
				next, found = w.Deadline, true
			}
		}
	}
	return next, found
}

// Owner is IS_USED_LOCK(name): the holder's connection id, if any.
func (t *Table) Owner(name string) (Session, bool) {
	if l := t.locks[name]; l != nil {
		return l.owner, true
	}
	return 0, false
}

// Waits reports the name s waits for, if it waits.
func (t *Table) Waits(s Session) (string, bool) {
	name, ok := t.waiting[s]
	return name, ok
}

// LockRow is one held lock: its name, holder and re-entrant levels, and
// the sessions queued for it in order.
type LockRow struct {
	Name    string
	Owner   Session
	Count   int
	Waiters []Session
}

// Rows lists the table by name.
func (t *Table) Rows() []LockRow {
	var rows []LockRow
	for _, name := range t.names() {
		l := t.locks[name]
		r := LockRow{Name: name, Owner: l.owner, Count: l.count}
		for _, w := range l.queue {
			r.Waiters = append(r.Waiters, w.Session)
		}
		rows = append(rows, r)
	}
	return rows
}

func (t *Table) names() []string {
	names := make([]string, 0, len(t.locks))
	for n := range t.locks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
