package mssqlnode

// The simulated SQL Server: one database's application locks served to
// go-mssqldb over any net.Conn (a dbnet connection in a run, net.Pipe in
// tests). Each connection is a session with a SPID; a request that waits
// for a lock blocks its session, as on SQL Server, while a reader goroutine
// keeps listening for the client's attention (cancel).
//
// Session rules (docs/sqlserver.md says where each comes from):
//   - the end of a session — the client closes it, the connection fails,
//     KILL — releases every lock it holds, of both owners, and rolls back
//     its transaction (sp_getapplock, Remarks: Session locks are released
//     when the session is logged out);
//   - a request whose packet carries the reset-connection flag
//     ([MS-TDS] 2.2.3.1.2, which go-mssqldb sets on the first request after
//     database/sql's ResetSession) first resets the session as
//     sp_reset_connection does: its locks are freed and its transaction
//     rolled back (the unofficial list of what sp_reset_connection resets;
//     Microsoft documents none);
//   - a crash (Stop) ends every session and every wait.

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"
)

// Server is one simulated SQL Server instance (one database).
type Server struct {
	// Name is the server name in replies and errors.
	Name string

	mu       sync.Mutex
	locks    *Manager
	sessions map[int16]*session
	nextSPID int16
	tranSeq  uint64
	stopped  bool
	clock    Clock
	// fence is the version column of the one row of table fence, which
	// fenced locks count their tokens on. Unlike the locks it is data: a
	// restart keeps it, and an availability group replicates it.
	fence int64
}

// Fence is the fence row's version.
func (s *Server) Fence() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fence
}

// SetFence sets the fence row's version (a restart, a replica's copy).
func (s *Server) SetFence(v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fence = v
}

// Clock is the time lock timeouts run on. The default is the time
// package, which is virtual inside a testing/synctest bubble; a simulation
// passes its own, whose timers are ordered kernel events.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels it.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// NewServer returns a server with no sessions and no locks (a fresh
// start, a restart, or the new primary after a failover: none of them
// keeps application locks, which live in memory only).
func NewServer(name string, clock Clock) *Server {
	if clock == nil {
		clock = systemClock{}
	}
	// SQL Server numbers user sessions above the system ones (1-50).
	return &Server{Name: name, locks: NewManager(), sessions: map[int16]*session{}, nextSPID: 51, clock: clock}
}

// Locks is the server's lock manager (for tests and the trace).
func (s *Server) Locks() *Manager { return s.locks }

type session struct {
	srv    *Server
	conn   net.Conn
	spid   int16
	tranID uint64 // 0: no transaction
	wake   chan Code
	reqs   chan message
	ended  bool
	// cancelled: an attention ended the current request.
	cancelled bool
}

// Serve runs one connection: prelogin, login, then requests until the
// connection fails or the session is killed.
func (s *Server) Serve(conn net.Conn) error {
	defer conn.Close()
	if err := s.handshake(conn); err != nil {
		return err
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return net.ErrClosed
	}
	ss := &session{srv: s, conn: conn, spid: s.nextSPID, wake: make(chan Code, 1), reqs: make(chan message)}
	s.nextSPID++
	s.sessions[ss.spid] = ss
	s.mu.Unlock()
	if err := ss.loginAck(); err != nil {
		s.end(ss)
		return err
	}
	go ss.read()
	err := ss.serve()
	s.end(ss)
	return err
}

// handshake answers PRELOGIN without encryption (ENCRYPT_NOT_SUP: the
// driver then sends LOGIN7 in the clear) and reads LOGIN7.
func (s *Server) handshake(conn net.Conn) error {
	m, err := readMessage(conn)
	if err != nil {
		return err
	}
	if m.typ != pktPrelogin {
		return fmt.Errorf("tds: expected PRELOGIN, got packet type %d", m.typ)
	}
	// Options ([MS-TDS] 2.2.6.5): VERSION (6 bytes), ENCRYPTION (1 byte,
	// 2 = ENCRYPT_NOT_SUP), terminator.
	reply := []byte{
		0x00, 0, 11, 0, 6,
		0x01, 0, 17, 0, 1,
		0xFF,
		16, 0, 0x07, 0xD0, 0, 0, // version 16.0.2000 (SQL Server 2022), sub-build 0
		2,
	}
	if err := writeMessage(conn, pktReply, 0, reply); err != nil {
		return err
	}
	m, err = readMessage(conn)
	if err != nil {
		return err
	}
	if m.typ != pktLogin7 {
		return fmt.Errorf("tds: expected LOGIN7, got packet type %d", m.typ)
	}
	return nil
}

func (ss *session) loginAck() error {
	var t tokens
	// LOGINACK ([MS-TDS] 2.2.7.14): interface 1 (T-SQL), TDS 7.4,
	// program name, program version.
	var la tokens
	la.u8(1)
	la.b = binary.BigEndian.AppendUint32(la.b, 0x74000004)
	la.bVarChar("Microsoft SQL Server")
	la.b = append(la.b, 16, 0, 0x07, 0xD0)
	t.u8(tokLoginAck)
	t.u16(uint16(len(la.b)))
	t.b = append(t.b, la.b...)
	t.envText(1, "locklab", "master") // the database
	t.done(0, 0)
	return writeMessage(ss.conn, pktReply, ss.spid, t.b)
}

// envText writes an ENVCHANGE whose values are B_VARCHAR text.
func (t *tokens) envText(typ byte, newV, oldV string) {
	var v tokens
	v.u8(typ)
	v.bVarChar(newV)
	v.bVarChar(oldV)
	t.u8(tokEnvChange)
	t.u16(uint16(len(v.b)))
	t.b = append(t.b, v.b...)
}

// read hands the session its requests; it closes reqs when the
// connection fails.
func (ss *session) read() {
	defer close(ss.reqs)
	for {
		m, err := readMessage(ss.conn)
		if err != nil {
			return
		}
		ss.reqs <- m
	}
}

func (ss *session) serve() error {
	for m := range ss.reqs {
		if m.status&statusResetConnection != 0 {
			ss.reset()
		}
		var t tokens
		switch m.typ {
		case pktSQLBatch:
			r := &reader{b: m.data}
			r.allHeaders()
			if r.err != nil {
				return r.err
			}
			ss.batch(&t, fromUCS2(r.b), nil, false)
		case pktRPC:
			if err := ss.rpc(&t, m.data); err != nil {
				return err
			}
		case pktTransMgr:
			if err := ss.transMgr(&t, m.data); err != nil {
				return err
			}
		case pktAttention:
			t.done(doneAttn, 0)
		default:
			return fmt.Errorf("tds: unexpected packet type %d", m.typ)
		}
		if ss.isEnded() {
			return net.ErrClosed
		}
		if ss.cancelled {
			// [MS-TDS] 3.2.5.7: the server ends the request and answers
			// the attention with DONE and its ATTN bit.
			ss.cancelled = false
			t = tokens{}
			t.done(doneAttn, 0)
		}
		if err := writeMessage(ss.conn, pktReply, ss.spid, t.b); err != nil {
			return err
		}
	}
	return nil
}

func (ss *session) isEnded() bool {
	ss.srv.mu.Lock()
	defer ss.srv.mu.Unlock()
	return ss.ended
}

// reset is sp_reset_connection's effect on locks: the session's locks go
// and its transaction is rolled back; the session (its SPID) stays.
func (ss *session) reset() {
	s := ss.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.tranID = 0
	s.deliver(s.locks.EndSession(ss.spid))
}

// end ends a session: its locks and its wait go with it.
func (s *Server) end(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[ss.spid] == ss {
		delete(s.sessions, ss.spid)
	}
	ss.ended = true
	s.deliver(s.locks.EndSession(ss.spid))
}

// deliver hands ended waits their codes (mu held).
func (s *Server) deliver(wakes []Wake) {
	for _, w := range wakes {
		if ss := s.sessions[w.Owner.SPID]; ss != nil {
			select {
			case ss.wake <- w.Code:
			default:
			}
		}
	}
}

// Kill is KILL spid: the session ends, its connection is closed and its
// locks are released. It reports whether the session existed.
func (s *Server) Kill(spid int16) bool {
	s.mu.Lock()
	ss := s.sessions[spid]
	if ss != nil {
		delete(s.sessions, spid)
		ss.ended = true
		s.deliver(s.locks.EndSession(spid))
	}
	s.mu.Unlock()
	if ss != nil {
		ss.conn.Close()
	}
	return ss != nil
}

// Stop is a crash: every session ends and every wait with it, and no lock
// survives (sp_getapplock, Remarks: when the server shuts down for any
// reason, the locks are released). The network resets the connections
// (sim/dbnet); Stop is called with the simulation's kernel held, so it
// does its work on a goroutine of its own, as sim/mysqlnode's does.
func (s *Server) Stop() {
	go func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.stopped = true
		for _, spid := range s.spids() {
			ss := s.sessions[spid]
			ss.ended = true
			delete(s.sessions, spid)
			select {
			case ss.wake <- Cancelled:
			default:
			}
		}
		s.locks = NewManager()
	}()
}

// spids lists the sessions in order (mu held).
func (s *Server) spids() []int16 {
	out := make([]int16, 0, len(s.sessions))
	for spid := range s.sessions {
		out = append(out, spid)
	}
	slices.Sort(out)
	return out
}

// getAppLock is sp_getapplock for the session: granted at once, or a
// wait until a release grants it, its timeout passes, the client cancels
// (an attention), or the session ends.
func (ss *session) getAppLock(o Owner, name string, mode Mode, timeout time.Duration) Code {
	s := ss.srv
	now := s.clock.Now() // before mu: a simulation's clock enters its kernel
	s.mu.Lock()
	code, waiting := s.locks.Get(o, name, mode, now, timeout)
	if !waiting {
		s.mu.Unlock()
		return code
	}
	select {
	case <-ss.wake: // a stale wake from an earlier wait
	default:
	}
	s.mu.Unlock()
	if timeout > 0 {
		stop := s.clock.AfterFunc(timeout, func() {
			now := s.clock.Now()
			s.mu.Lock()
			defer s.mu.Unlock()
			s.deliver(s.locks.Expire(now))
		})
		defer stop()
	}
	for {
		select {
		case c := <-ss.wake:
			return c
		case m, ok := <-ss.reqs:
			s.mu.Lock()
			wakes := s.locks.Cancel(ss.spid)
			s.deliver(wakes)
			s.mu.Unlock()
			if !ok {
				return Cancelled
			}
			if m.typ == pktAttention {
				ss.cancelled = true
				return Cancelled
			}
		}
	}
}
