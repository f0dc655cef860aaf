// Package pgnode is the simulated Postgres server of issue 22. This
// file is its advisory lock table: the lock state pg_advisory_lock and its
// family read and write, kept apart from the wire protocol so the
// differential test can compare it with pg_locks directly.
//
// Semantics follow PostgreSQL 15 (src/backend/storage/lmgr/lock.c and the
// "Advisory Lock Functions" table of the manual, section 9.27.10):
//   - a key is either one bigint or a pair of int4, in separate spaces
//     (pg_locks shows objsubid 1 or 2);
//   - modes are exclusive and shared; a session never conflicts with itself;
//   - session-level locks stack: locking a key twice needs two unlocks;
//     transaction-level (_xact) locks are released only at transaction end;
//   - pg_advisory_unlock* release session-level locks only and report false
//     when the session holds no such lock;
//   - a request waits if it conflicts with a granted lock of another session
//     or with a request already waiting (lock.c checks lock->waitMask first,
//     so waiters are not starved), and the wake-up walks the queue in order
//     with the same rule (ProcLockWakeup's aheadRequests).
package pgnode

import "sort"

// Key names one advisory lock. Pair is false for the bigint form, whose
// value Postgres splits into classid (high 32 bits) and objid (low 32 bits).
type Key struct {
	Pair bool
	A, B int64 // bigint: A is the key; pair: A and B are the two int4 values
}

// Mode is an advisory lock mode.
type Mode int

const (
	Exclusive Mode = iota
	Shared
)

func (m Mode) conflicts(o Mode) bool { return m == Exclusive || o == Exclusive }

// Session identifies a backend (one client connection).
type Session int

// Hold is one session's holdings on one key in one mode: session-level
// count (stacked) and transaction-level count.
type Hold struct {
	Session     Session
	Mode        Mode
	SessionRefs int
	XactRefs    int
}

// Waiter is a blocked pg_advisory_lock or pg_advisory_xact_lock call.
type Waiter struct {
	Session Session
	Mode    Mode
	Xact    bool
}

type keyState struct {
	holds   []Hold
	waiters []Waiter
}

// Table is the advisory lock table of one server.
type Table struct {
	keys map[Key]*keyState
}

// NewTable returns an empty lock table.
func NewTable() *Table { return &Table{keys: map[Key]*keyState{}} }

func (t *Table) state(k Key) *keyState {
	st := t.keys[k]
	if st == nil {
		st = &keyState{}
		t.keys[k] = st
	}
	return st
}

func (st *keyState) grantable(s Session, m Mode, ahead []Waiter) bool {
	for _, h := range st.holds {
		if h.Session != s && m.conflicts(h.Mode) {
			return false
		}
	}
	for _, w := range ahead {
		if w.Session != s && m.conflicts(w.Mode) {
			return false
		}
	}
	return true
}

func (st *keyState) grant(s Session, m Mode, xact bool) {
	for i := range st.holds {
		h := &st.holds[i]
		if h.Session == s && h.Mode == m {
			if xact {
				h.XactRefs++
			} else {
				h.SessionRefs++
			}
			return
		}
	}
	h := Hold{Session: s, Mode: m}
	if xact {
		h.XactRefs = 1
	} else {
		h.SessionRefs = 1
	}
	st.holds = append(st.holds, h)
}

// Acquire asks for k in mode m for session s. It returns true when granted
// at once. Otherwise, when wait is set (pg_advisory_lock), the request
// joins the key's queue and a later release grants it (see the returned
// grants of Unlock and EndSession); with wait unset (pg_try_advisory_lock)
// nothing changes.
func (t *Table) Acquire(s Session, k Key, m Mode, xact, wait bool) bool {
	st := t.state(k)
	if st.grantable(s, m, st.waiters) {
		st.grant(s, m, xact)
		return true
	}
	if wait {
		st.waiters = append(st.waiters, Waiter{Session: s, Mode: m, Xact: xact})
	} else {
		t.drop(k, st)
	}
	return false
}

// Grant is a waiting request that a release has just granted.
type Grant struct {
	Key Key
	Waiter
}

// Unlock releases one session-level hold of k in mode m (pg_advisory_unlock
// or pg_advisory_unlock_shared). It reports whether s held one, and the
// waiters this release granted.
func (t *Table) Unlock(s Session, k Key, m Mode) (bool, []Grant) {
	st := t.keys[k]
	if st == nil {
		return false, nil
	}
	for i := range st.holds {
		h := &st.holds[i]
		if h.Session == s && h.Mode == m && h.SessionRefs > 0 {
			h.SessionRefs--
			st.compact()
			return true, t.wake(k, st)
		}
	}
	return false, nil
}

// UnlockAll releases every session-level hold of s (pg_advisory_unlock_all,
// also run at session end); transaction-level holds stay.
func (t *Table) UnlockAll(s Session) []Grant {
	return t.release(s, func(h *Hold) { h.SessionRefs = 0 })
}

// EndXact releases every transaction-level hold of s (COMMIT, ROLLBACK, or
// the end of an implicit transaction around a single statement).
func (t *Table) EndXact(s Session) []Grant {
	return t.release(s, func(h *Hold) { h.XactRefs = 0 })
}

// EndSession removes s: its waits are cancelled and all its holds released.
func (t *Table) EndSession(s Session) []Grant {
	for _, k := range t.sortedKeys() {
		st := t.keys[k]
		kept := st.waiters[:0]
		for _, w := range st.waiters {
			if w.Session != s {
				kept = append(kept, w)
			}
		}
		st.waiters = kept
	}
	return t.release(s, func(h *Hold) { h.SessionRefs, h.XactRefs = 0, 0 })
}

// CancelWait withdraws s's queued request, if any (a cancelled
// pg_advisory_lock: proc.c LockErrorCleanup removes it from the wait
// queue and wakes whoever it was blocking). It reports whether s was
// waiting, and the requests granted now that it no longer stands ahead.
func (t *Table) CancelWait(s Session) (bool, []Grant) {
	var grants []Grant
	found := false
	for _, k := range t.sortedKeys() {
		st := t.keys[k]
		kept := st.waiters[:0]
		for _, w := range st.waiters {
			if w.Session == s {
				found = true
				continue
			}
			kept = append(kept, w)
		}
		st.waiters = kept
		grants = append(grants, t.wake(k, st)...)
	}
	return found, grants
}

func (t *Table) release(s Session, clear func(*Hold)) []Grant {
	var grants []Grant
	for _, k := range t.sortedKeys() {
		st := t.keys[k]
		for i := range st.holds {
			if st.holds[i].Session == s {
				clear(&st.holds[i])
			}
		}
		st.compact()
		grants = append(grants, t.wake(k, st)...)
	}
	return grants
}

func (st *keyState) compact() {
	kept := st.holds[:0]
	for _, h := range st.holds {
		if h.SessionRefs+h.XactRefs > 0 {
			kept = append(kept, h)
		}
	}
	st.holds = kept
}

// wake grants queued requests in order, each only if it conflicts neither
// with granted locks nor with requests still waiting ahead of it.
func (t *Table) wake(k Key, st *keyState) []Grant {
	var grants []Grant
	var ahead []Waiter
	for _, w := range st.waiters {
		if st.grantable(w.Session, w.Mode, ahead) {
			st.grant(w.Session, w.Mode, w.Xact)
			grants = append(grants, Grant{Key: k, Waiter: w})
		} else {
			ahead = append(ahead, w)
		}
	}
	st.waiters = ahead
	t.drop(k, st)
	return grants
}

func (t *Table) drop(k Key, st *keyState) {
	if len(st.holds) == 0 && len(st.waiters) == 0 {
		delete(t.keys, k)
	}
}

// LockRow is one advisory row of pg_locks: granted holds and waiting
// requests, one row per (session, mode, granted).
type LockRow struct {
	Key     Key
	Session Session
	Mode    Mode
	Granted bool
}

// Rows lists the table as pg_locks would, ordered by key, then granted
// holds in grant order, then waiters in queue order.
func (t *Table) Rows() []LockRow {
	var rows []LockRow
	for _, k := range t.sortedKeys() {
		st := t.keys[k]
		for _, h := range st.holds {
			rows = append(rows, LockRow{Key: k, Session: h.Session, Mode: h.Mode, Granted: true})
		}
		for _, w := range st.waiters {
			rows = append(rows, LockRow{Key: k, Session: w.Session, Mode: w.Mode})
		}
	}
	return rows
}

func (t *Table) sortedKeys() []Key {
	keys := make([]Key, 0, len(t.keys))
	for k := range t.keys {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Pair != b.Pair {
			return !a.Pair
		}
		if a.A != b.A {
			return a.A < b.A
		}
		return a.B < b.B
	})
	return keys
}
