// Package mssqlnode is the simulated SQL Server of issue 35. This file is
// its application-lock manager (sp_getapplock, sp_releaseapplock,
// APPLOCK_MODE, APPLOCK_TEST), a pure state machine: time is an argument,
// nothing here sleeps or reads a clock, so a server can run it on a
// simulation's virtual time and it can be tested alone.
//
// No SQL Server can be installed where locklab is built, so no real server
// checks these rules; each follows Microsoft's documentation, as
// docs/sqlserver.md lists it:
//   - modes Shared, Update, IntentShared, IntentExclusive, Exclusive
//     (sp_getapplock, @LockMode), compared with SQL Server's lock
//     compatibility matrix ("Transaction locking and row versioning
//     guide", Lock compatibility);
//   - owners Transaction (the default; only inside a transaction, released
//     at its commit or rollback) and Session (released when the session
//     ends) (sp_getapplock, @LockOwner and Remarks);
//   - counted: called n times for a resource, sp_releaseapplock must be
//     called n times; requests in another mode hold the union of the
//     modes, the stronger, until the last release (sp_getapplock,
//     Remarks) — APPLOCK_MODE names the unions SharedIntentExclusive and
//     UpdateIntentExclusive;
//   - @LockTimeout in ms: -1 waits for ever, 0 answers at once;
//   - return codes 0 (granted at once), 1 (granted after waiting), -1
//     (timed out), -2 (cancelled), -3 (deadlock victim), -999 (parameter
//     or call error) (sp_getapplock, Return code values); sp_releaseapplock
//     returns 0 or -999 (sp_releaseapplock, Return code values);
//   - a deadlock does not roll the requester's transaction back
//     (sp_getapplock, Remarks).
//
// Simplifications, said where they are made: the victim of a deadlock is
// the request that closes the cycle, found when it starts to wait (SQL
// Server's lock monitor searches every 5 s and weighs DEADLOCK_PRIORITY
// and rollback cost); waiters are granted in arrival order, a conversion
// (an owner asking again) ahead of new owners; two owners of one session
// (its Session and its Transaction) never wait for each other.
package mssqlnode

import (
	"slices"
	"sort"
	"time"
)

// Mode is a lock mode, or a union of them (a bit each).
type Mode uint8

// The modes sp_getapplock accepts.
const (
	IntentShared Mode = 1 << iota
	Shared
	Update
	IntentExclusive
	Exclusive
)

// ParseMode reads @LockMode; the names are SQL Server's, compared as the
// server compares parameter text (case-insensitively).
func ParseMode(s string) (Mode, bool) {
	for _, m := range []Mode{IntentShared, Shared, Update, IntentExclusive, Exclusive} {
		if equalFold(s, m.String()) {
			return m, true
		}
	}
	return 0, false
}

// String is APPLOCK_MODE's name for a mode or a union of modes.
func (m Mode) String() string {
	switch {
	case m == 0:
		return "NoLock"
	case m&Exclusive != 0:
		return "Exclusive"
	case m&Update != 0 && m&IntentExclusive != 0:
		return "UpdateIntentExclusive"
	case m&Shared != 0 && m&IntentExclusive != 0:
		return "SharedIntentExclusive"
	case m&Update != 0:
		return "Update"
	case m&IntentExclusive != 0:
		return "IntentExclusive"
	case m&Shared != 0:
		return "Shared"
	}
	return "IntentShared"
}

// compatible is SQL Server's lock compatibility matrix for the five
// modes: may a request in mode req be granted while another owner holds
// mode held?
func compatible(req, held Mode) bool {
	switch req {
	case IntentShared:
		return held != Exclusive
	case Shared:
		return held == IntentShared || held == Shared || held == Update
	case Update:
		return held == IntentShared || held == Shared
	case IntentExclusive:
		return held == IntentShared || held == IntentExclusive
	}
	return false // Exclusive
}

// compatibleUnion: req against every mode of a held union.
func compatibleUnion(req, held Mode) bool {
	for m := IntentShared; m <= Exclusive; m <<= 1 {
		if held&m != 0 && !compatible(req, m) {
			return false
		}
	}
	return true
}

// OwnerKind is @LockOwner.
type OwnerKind uint8

const (
	OwnerTransaction OwnerKind = iota // the default
	OwnerSession
)

// String is the @LockOwner text.
func (k OwnerKind) String() string {
	if k == OwnerSession {
		return "Session"
	}
	return "Transaction"
}

// Owner is a lock owner: a session (its SPID) and the kind. A
// Transaction owner stands for the session's current transaction.
type Owner struct {
	SPID int16
	Kind OwnerKind
}

// Code is a return code of sp_getapplock or sp_releaseapplock.
type Code int

// The documented return codes.
const (
	Granted        Code = 0
	GrantedWaited  Code = 1
	TimedOut       Code = -1
	Cancelled      Code = -2
	DeadlockVictim Code = -3
	CallError      Code = -999
)

// Forever is @LockTimeout -1: wait until granted.
const Forever = time.Duration(-1)

type grant struct {
	owner Owner
	mode  Mode // the union of the modes requested
	count int  // grants not yet released
}

// Waiter is a request waiting for a resource.
type Waiter struct {
	Owner    Owner
	Resource string
	Mode     Mode
	Deadline time.Time // zero: waits for ever
}

type resource struct {
	grants []*grant
	queue  []Waiter
}

// Wake is a waiting request that ended: granted (GrantedWaited), timed
// out, cancelled.
type Wake struct {
	Owner    Owner
	Resource string
	Code     Code
}

// Manager is one database's application locks.
type Manager struct {
	res     map[string]*resource
	waiting map[int16]string // resource each waiting session waits for
}

// NewManager returns a manager with no locks.
func NewManager() *Manager {
	return &Manager{res: map[string]*resource{}, waiting: map[int16]string{}}
}

func (r *resource) find(o Owner) *grant {
	for _, g := range r.grants {
		if g.owner == o {
			return g
		}
	}
	return nil
}

// grantable: no other session's grant conflicts with mode (a session
// never waits for itself).
func (r *resource) grantable(o Owner, mode Mode) bool {
	for _, g := range r.grants {
		if g.owner.SPID != o.SPID && !compatibleUnion(mode, g.mode) {
			return false
		}
	}
	return true
}

func (r *resource) add(o Owner, mode Mode) {
	if g := r.find(o); g != nil {
		g.mode |= mode
		g.count++
		return
	}
	r.grants = append(r.grants, &grant{owner: o, mode: mode, count: 1})
}

// Get is sp_getapplock by o at now. A conversion (o already holds the
// resource) is granted when no other session's grant conflicts; a new
// owner also waits behind the queue. With no grant at once: timeout 0
// answers TimedOut, a wait that would close a cycle DeadlockVictim, and
// otherwise the request waits (waiting true) until Release, EndTransaction,
// EndSession, Cancel or Expire ends it.
func (m *Manager) Get(o Owner, name string, mode Mode, now time.Time, timeout time.Duration) (code Code, waiting bool) {
	r := m.res[name]
	if r == nil {
		r = &resource{}
		m.res[name] = r
	}
	converting := r.find(o) != nil
	if r.grantable(o, mode) && (converting || len(r.queue) == 0) {
		r.add(o, mode)
		return Granted, false
	}
	if timeout == 0 {
		m.drop(name)
		return TimedOut, false
	}
	if m.closesCycle(o.SPID, name, mode) {
		m.drop(name)
		return DeadlockVictim, false
	}
	w := Waiter{Owner: o, Resource: name, Mode: mode}
	if timeout > 0 {
		w.Deadline = now.Add(timeout)
	}
	if converting {
		r.queue = append([]Waiter{w}, r.queue...)
	} else {
		r.queue = append(r.queue, w)
	}
	m.waiting[o.SPID] = name
	return 0, true
}

// closesCycle: would spid waiting for name wait, through holders waiting
// in turn, for itself?
func (m *Manager) closesCycle(spid int16, name string, mode Mode) bool {
	seen := map[int16]bool{}
	var blockers func(name string, mode Mode, asker int16) []int16
	blockers = func(name string, mode Mode, asker int16) []int16 {
		var out []int16
		for _, g := range m.res[name].grants {
			if g.owner.SPID != asker && !compatibleUnion(mode, g.mode) {
				out = append(out, g.owner.SPID)
			}
		}
		return out
	}
	stack := blockers(name, mode, spid)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == spid {
			return true
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		if wn, ok := m.waiting[s]; ok {
			for _, w := range m.res[wn].queue {
				if w.Owner.SPID == s {
					stack = append(stack, blockers(wn, w.Mode, s)...)
				}
			}
		}
	}
	return false
}

// Release is sp_releaseapplock: one grant of o's fewer. A resource o does
// not hold is a call error (-999). Waiters it unblocks are returned.
func (m *Manager) Release(o Owner, name string) (Code, []Wake) {
	r := m.res[name]
	if r == nil || r.find(o) == nil {
		return CallError, nil
	}
	g := r.find(o)
	g.count--
	if g.count > 0 {
		return Granted, nil
	}
	r.grants = slices.DeleteFunc(r.grants, func(x *grant) bool { return x == g })
	return Granted, m.promote(name)
}

// EndTransaction releases every grant of spid's Transaction owner (the
// transaction committed or rolled back).
func (m *Manager) EndTransaction(spid int16) []Wake {
	return m.releaseAll(Owner{SPID: spid, Kind: OwnerTransaction})
}

// EndSession releases everything the session holds, of both owners, and
// withdraws its wait (the session logged out, was killed or reset, or its
// connection died).
func (m *Manager) EndSession(spid int16) []Wake {
	var wakes []Wake
	if name, ok := m.waiting[spid]; ok {
		m.withdraw(spid, name)
		wakes = append(wakes, m.promote(name)...)
	}
	wakes = append(wakes, m.releaseAll(Owner{SPID: spid, Kind: OwnerTransaction})...)
	return append(wakes, m.releaseAll(Owner{SPID: spid, Kind: OwnerSession})...)
}

func (m *Manager) releaseAll(o Owner) []Wake {
	var wakes []Wake
	for _, name := range m.names() {
		r := m.res[name]
		if n := len(r.grants); n > 0 {
			r.grants = slices.DeleteFunc(r.grants, func(g *grant) bool { return g.owner == o })
			if len(r.grants) != n {
				wakes = append(wakes, m.promote(name)...)
			}
		}
	}
	return wakes
}

// Cancel ends spid's wait with Cancelled (an attention from its client).
func (m *Manager) Cancel(spid int16) []Wake {
	name, ok := m.waiting[spid]
	if !ok {
		return nil
	}
	w := m.withdraw(spid, name)
	return append([]Wake{{Owner: w.Owner, Resource: name, Code: Cancelled}}, m.promote(name)...)
}

// Expire ends the waits whose deadline is at or before now with TimedOut.
func (m *Manager) Expire(now time.Time) []Wake {
	var wakes []Wake
	for _, name := range m.names() {
		r := m.res[name]
		var expired []Waiter
		for _, w := range r.queue {
			if !w.Deadline.IsZero() && !w.Deadline.After(now) {
				expired = append(expired, w)
			}
		}
		for _, w := range expired {
			m.withdraw(w.Owner.SPID, name)
			wakes = append(wakes, Wake{Owner: w.Owner, Resource: name, Code: TimedOut})
		}
		if len(expired) > 0 {
			wakes = append(wakes, m.promote(name)...)
		}
	}
	return wakes
}

// NextDeadline is the earliest deadline of a waiting request (zero: none).
func (m *Manager) NextDeadline() time.Time {
	var next time.Time
	for _, r := range m.res {
		for _, w := range r.queue {
			if !w.Deadline.IsZero() && (next.IsZero() || w.Deadline.Before(next)) {
				next = w.Deadline
			}
		}
	}
	return next
}

func (m *Manager) withdraw(spid int16, name string) Waiter {
	r := m.res[name]
	var w Waiter
	r.queue = slices.DeleteFunc(r.queue, func(x Waiter) bool {
		if x.Owner.SPID == spid {
			w = x
			return true
		}
		return false
	})
	delete(m.waiting, spid)
	return w
}

// promote grants the queue's head requests, in order, while they can be
// granted.
func (m *Manager) promote(name string) []Wake {
	r := m.res[name]
	var wakes []Wake
	for len(r.queue) > 0 && r.grantable(r.queue[0].Owner, r.queue[0].Mode) {
		w := r.queue[0]
		r.queue = r.queue[1:]
		delete(m.waiting, w.Owner.SPID)
		r.add(w.Owner, w.Mode)
		wakes = append(wakes, Wake{Owner: w.Owner, Resource: name, Code: GrantedWaited})
	}
	m.drop(name)
	return wakes
}

// drop forgets a resource nobody holds or waits for.
func (m *Manager) drop(name string) {
	if r := m.res[name]; r != nil && len(r.grants) == 0 && len(r.queue) == 0 {
		delete(m.res, name)
	}
}

func (m *Manager) names() []string {
	out := make([]string, 0, len(m.res))
	for n := range m.res {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Mode is APPLOCK_MODE: the mode o holds on name.
func (m *Manager) Mode(o Owner, name string) Mode {
	if r := m.res[name]; r != nil {
		if g := r.find(o); g != nil {
			return g.mode
		}
	}
	return 0
}

// Test is APPLOCK_TEST: could o be granted mode on name now, without
// waiting? It acquires nothing.
func (m *Manager) Test(o Owner, name string, mode Mode) bool {
	r := m.res[name]
	return r == nil || r.grantable(o, mode) && (r.find(o) != nil || len(r.queue) == 0)
}

// Holders lists the owners holding name, for the trace and tests.
func (m *Manager) Holders(name string) []Owner {
	var out []Owner
	if r := m.res[name]; r != nil {
		for _, g := range r.grants {
			out = append(out, g.owner)
		}
	}
	return out
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
