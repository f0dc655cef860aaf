package pgnode

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Server is one simulated Postgres server: the advisory lock table, the
// fencing row and the sessions (backends) of its client connections. The
// wire protocol is in backend.go; this file is what a statement does.
type Server struct {
	mu      sync.Mutex
	table   *Table
	fence   int64 // committed token of the fencing row
	next    Session
	wakeups map[Session]chan struct{} // sessions blocked in pg_advisory_lock
	// cancelled marks a waiting session whose wait a CancelRequest ended.
	cancelled map[Session]bool
	// stopped: the server process is gone (Stop); no wait goes on.
	stopped bool
}

// NewServer returns a server with no sessions, no locks and fence token 0.
func NewServer() *Server {
	return &Server{table: NewTable(), wakeups: map[Session]chan struct{}{}, cancelled: map[Session]bool{}}
}

// Locks lists the advisory rows of pg_locks.
func (s *Server) Locks() []LockRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.Rows()
}

// FenceToken is the fencing row's committed token.
func (s *Server) FenceToken() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fence
}

// wake lets the sessions a release granted return from their wait. Caller
// holds mu.
func (s *Server) wake(grants []Grant) {
	for _, g := range grants {
		if ch := s.wakeups[g.Session]; ch != nil {
			close(ch)
			delete(s.wakeups, g.Session)
		}
	}
}

// secretKey is the BackendKeyData secret of a session, which a
// CancelRequest must quote; derived from the id so runs replay.
func secretKey(s Session) uint32 { return uint32(s) * 2654435761 }

// cancel ends the wait of the session a CancelRequest names (PG15 manual
// 55.2.7): its pg_advisory_lock fails with 57014. A request for a session
// that is not waiting, or with the wrong secret, does nothing, as in
// Postgres.
func (s *Server) cancel(pid, secret uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid := Session(pid)
	if secretKey(sid) != secret || s.wakeups[sid] == nil {
		return
	}
	_, grants := s.table.CancelWait(sid)
	s.cancelled[sid] = true
	close(s.wakeups[sid])
	delete(s.wakeups, sid)
	s.wake(grants)
}

var errCanceled = &SQLError{Code: "57014", Message: "canceling statement due to user request"}

var errShutdown = &SQLError{Code: "57P01", Message: "terminating connection due to administrator command"}

// Stop ends the server process: every lock wait ends with 57P01, as a
// shutdown's SIGTERM ends backends (a crash ends them without a word; the
// connections fail either way). The simulated network calls it when the
// server crashes or the run ends, so that no backend goroutine stays
// blocked in a wait (sim/dbnet).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	var ids []Session
	for id := range s.wakeups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		close(s.wakeups[id])
		delete(s.wakeups, id)
	}
}

// SetFenceToken sets the fencing row's committed token: a restarted
// server keeps its tables (the row is durable, the advisory locks are not).
func (s *Server) SetFenceToken(v int64) {
	s.mu.Lock()
	s.fence = v
	s.mu.Unlock()
}

// session is one backend's transaction state.
type session struct {
	srv *Server
	id  Session
	// inBlock is set between BEGIN and COMMIT/ROLLBACK; outside it each
	// simple Query message or extended-protocol Sync is its own implicit
	// transaction (PG15 manual, 55.2.2 and 55.2.4).
	inBlock bool
	failed  bool   // an error inside the block: only ROLLBACK/COMMIT work
	pending *int64 // the fence token this transaction wrote, applied at commit
}

func (s *Server) openSession() *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	return &session{srv: s, id: s.next}
}

// end is the backend exiting: its waits are cancelled, its session and
// transaction locks released (lock.c LockReleaseAll at ProcKill), its
// uncommitted write discarded.
func (ss *session) end() {
	ss.srv.mu.Lock()
	defer ss.srv.mu.Unlock()
	ss.srv.wake(ss.srv.table.EndSession(ss.id))
}

// txStatus is the ReadyForQuery status byte.
func (ss *session) txStatus() byte {
	switch {
	case ss.failed:
		return 'E'
	case ss.inBlock:
		return 'T'
	}
	return 'I'
}

// endImplicit closes the implicit transaction around statements run
// outside a block: _xact locks go, the fence write commits unless a
// statement failed.
func (ss *session) endImplicit(ok bool) {
	if ss.inBlock {
		return
	}
	ss.endXact(ok)
}

func (ss *session) endXact(commit bool) {
	ss.srv.mu.Lock()
	defer ss.srv.mu.Unlock()
	if commit && ss.pending != nil {
		ss.srv.fence = *ss.pending
	}
	ss.pending = nil
	ss.inBlock, ss.failed = false, false
	ss.srv.wake(ss.srv.table.EndXact(ss.id))
}

// Result type OIDs (pg_type.dat).
const (
	oidBool = 16
	oidInt8 = 20
	oidInt4 = 23
	oidVoid = 2278
)

// result is what one statement returns: a command tag and at most one
// row of one column.
type result struct {
	tag    string
	column string
	oid    uint32
	row    bool // a row is returned
	null   bool
	value  int64 // int4/int8 value, or 1/0 for bool
}

// paramTypes is what Describe reports for a statement's parameters: keys
// of the one-argument functions are bigint, of the two-argument ones int4
// (pg_proc.dat), the fence token bigint.
func paramTypes(st Statement) []uint32 {
	n := 0
	for _, a := range st.Args {
		if a.Param > n {
			n = a.Param
		}
	}
	oids := make([]uint32, n)
	for i := range oids {
		oids[i] = oidInt8
	}
	if st.Kind == StmtLockCall && len(st.Args) == 2 {
		for i := range oids {
			oids[i] = oidInt4
		}
	}
	return oids
}

// describe is the result column a statement returns, if any.
func describe(st Statement) (name string, oid uint32, ok bool) {
	switch st.Kind {
	case StmtSelectInt:
		return st.Column, oidInt4, true
	case StmtFenceRead:
		return st.Column, oidInt8, true
	case StmtLockCall:
		if st.Func.ReturnsBool() {
			return st.Column, oidBool, true
		}
		return st.Column, oidVoid, true
	}
	return "", 0, false
}

var errAborted = &SQLError{Code: "25P02", Message: "current transaction is aborted, commands ignored until end of transaction block"}

// exec runs one statement with its parameter values (nil for SQL NULL).
// A blocking lock function waits here until granted.
func (ss *session) exec(st Statement, params []*int64) (result, error) {
	if ss.failed && st.Kind != StmtCommit && st.Kind != StmtRollback {
		return result{}, errAborted
	}
	args, null, err := bindArgs(st, params)
	if err != nil {
		return result{}, ss.fail(err)
	}
	name, oid, _ := describe(st)
	res := result{column: name, oid: oid}
	switch st.Kind {
	case StmtEmpty:
		return res, nil
	case StmtBegin:
		// A second BEGIN only warns in Postgres; the block continues.
		ss.inBlock = true
		res.tag = "BEGIN"
	case StmtCommit:
		res.tag = "COMMIT"
		if ss.failed {
			res.tag = "ROLLBACK" // COMMIT of a failed block rolls back
		}
		ss.endXact(!ss.failed)
	case StmtRollback:
		res.tag = "ROLLBACK"
		ss.endXact(false)
	case StmtSelectInt:
		res.tag, res.row, res.value = "SELECT 1", true, st.Int
	case StmtDiscardAll:
		if ss.inBlock {
			return result{}, ss.fail(&SQLError{Code: "25001", Message: "DISCARD ALL cannot run inside a transaction block"})
		}
		res.tag = "DISCARD ALL"
		ss.srv.mu.Lock()
		ss.srv.wake(ss.srv.table.UnlockAll(ss.id))
		ss.srv.mu.Unlock()
	case StmtFenceRead:
		ss.srv.mu.Lock()
		res.value = ss.srv.fence
		if ss.pending != nil {
			res.value = *ss.pending
		}
		ss.srv.mu.Unlock()
		res.tag, res.row = "SELECT 1", true
	case StmtFenceUpdate:
		res.tag = "UPDATE 0"
		ss.srv.mu.Lock()
		current := ss.srv.fence
		if ss.pending != nil {
			current = *ss.pending
		}
		if !null && args[0] > current {
			v := args[0]
			ss.pending = &v
			res.tag = "UPDATE 1"
		}
		ss.srv.mu.Unlock()
	case StmtLockCall:
		res.tag, res.row = "SELECT 1", true
		if null {
			// The lock functions are strict: a NULL key returns NULL
			// without touching the lock table.
			res.null = true
			return res, nil
		}
		v, err := ss.lockCall(st.Func, args)
		if err != nil {
			return result{}, ss.fail(err)
		}
		res.value = v
	}
	return res, nil
}

// fail marks an open block failed, as any error inside one does. The
// transaction itself is aborted at once (xact.c AbortTransaction releases
// its locks and discards its writes); only the block state waits for
// ROLLBACK or COMMIT.
func (ss *session) fail(err error) error {
	if ss.inBlock && !ss.failed {
		ss.failed = true
		ss.srv.mu.Lock()
		ss.pending = nil
		ss.srv.wake(ss.srv.table.EndXact(ss.id))
		ss.srv.mu.Unlock()
	}
	return err
}

// Fail records an error raised outside exec (parse or bind) for the block.
// In an aborted block, Postgres checks the abort state after raw parsing
// but before looking functions up (postgres.c exec_parse_message and
// exec_simple_query), so a syntax error is still reported as such while
// an unknown function becomes 25P02. Bind looks its prepared statement up
// before it checks the abort state (exec_bind_message), so a statement
// that DISCARD ALL deallocated is reported as 26000 in any state.
func (ss *session) Fail(err error) error {
	var e *SQLError
	if ss.failed && (!errors.As(err, &e) || e.Code != "42601" && e.Code != "26000") {
		return errAborted
	}
	return ss.fail(err)
}

func bindArgs(st Statement, params []*int64) ([]int64, bool, error) {
	args := make([]int64, len(st.Args))
	null := false
	for i, a := range st.Args {
		if a.Null {
			null = true
			continue
		}
		if a.Param == 0 {
			args[i] = a.Value
			continue
		}
		if a.Param > len(params) {
			return nil, false, &SQLError{Code: "42P02", Message: fmt.Sprintf("there is no parameter $%d", a.Param)}
		}
		if params[a.Param-1] == nil {
			null = true
			continue
		}
		args[i] = *params[a.Param-1]
	}
	if len(args) == 2 {
		for _, v := range args {
			if v < -1<<31 || v >= 1<<31 {
				return nil, false, &SQLError{Code: "22003", Message: "integer out of range"}
			}
		}
	}
	return args, null, nil
}

// lockCall runs one advisory lock function and returns its bool as 1/0
// (void functions return 0, unused), or 57014 when a CancelRequest ended
// its wait.
func (ss *session) lockCall(f LockFunc, args []int64) (int64, error) {
	var key Key // unlock_all takes no key
	switch len(args) {
	case 1:
		key = Key{A: args[0]}
	case 2:
		key = Key{Pair: true, A: args[0], B: args[1]}
	}
	srv := ss.srv
	srv.mu.Lock()
	switch {
	case f.All:
		srv.wake(srv.table.UnlockAll(ss.id))
		srv.mu.Unlock()
		return 0, nil
	case f.Unlock:
		ok, grants := srv.table.Unlock(ss.id, key, f.Mode)
		srv.wake(grants)
		srv.mu.Unlock()
		return boolInt(ok), nil
	}
	if srv.stopped {
		srv.mu.Unlock()
		return 0, errShutdown
	}
	granted := srv.table.Acquire(ss.id, key, f.Mode, f.Xact, !f.Try)
	if granted || f.Try {
		srv.mu.Unlock()
		return boolInt(granted), nil
	}
	// Queued: a release by another session closes ch (Server.wake).
	ch := make(chan struct{})
	srv.wakeups[ss.id] = ch
	srv.mu.Unlock()
	<-ch
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.cancelled[ss.id] {
		delete(srv.cancelled, ss.id)
		return 0, errCanceled
	}
	if srv.stopped {
		return 0, errShutdown
	}
	return 0, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
