package mysqlnode

import (
	"context"
	"fmt"

	"net"
	"sync"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	vtlog "github.com/dolthub/vitess/go/vt/log"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// This file is the server: sessions, waits on the caller's clock, and the
// wire protocol through vitess's mysql.Listener, one listener per client
// connection so that any net.Conn (a pipe, the simulated network) can be
// served.

func init() {
	// vitess logs through its vt/log variables (glog-style, to the
	// standard logger); a simulated server must not write to the
	// process's log. Fatal stays as it is.
	quiet := func(...any) {}
	quietf := func(string, ...any) {}
	vtlog.Info, vtlog.Warning, vtlog.Error = quiet, quiet, quiet
	vtlog.Infof, vtlog.Warningf, vtlog.Errorf = quietf, quietf, quietf
}

// Version is what the server announces. MariaDB prefixes its version with
// "5.5.5-" in the handshake for old clients' sake; drivers strip it.
const Version = "5.5.5-10.11.19-MariaDB-locklab"

// Clock is the time a server waits on: GET_LOCK deadlines and
// wait_timeout. The zero Config uses the time package, which is virtual
// inside a testing/synctest bubble; a simulation passes its own.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels it
	// and reports whether it did so before f was called.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Config sets up a Server.
type Config struct {
	Clock Clock
	// WaitTimeout is the global wait_timeout, which each new session
	// starts with: a session idle (the server waiting for its next
	// command) that long is closed by the server, and its locks freed.
	// Zero means never (MariaDB's default is 28800 s).
	WaitTimeout time.Duration
	// Fence is the fencing row the server stores: nil for a row of its
	// own; the nodes of a multi-primary cluster share one (fence.go),
	// and a restarted server is given the row it had (it keeps its
	// tables).
	Fence *FenceRow
}

// Server is one simulated MySQL server.
type Server struct {
	cfg      Config
	mu       sync.Mutex
	table    *Table
	next     Session
	sessions map[Session]*session
	// timer is armed for the next instant something is due: a GET_LOCK
	// deadline or an idle session's wait_timeout. One timer for both, so
	// that what is due at one instant happens in one fixed order.
	timer   func() bool
	timerAt time.Time
	fence   *FenceRow             // the fencing row (Config.Fence)
	tap     func(Session, []byte) // sees every reply the server writes (tests)
	// parsed caches statements by their text: a driver sends the same
	// few again and again, and parsing is most of a statement's cost.
	parsed  map[string]sqlparser.Statement
	stopped bool
}

// NewServer returns a server with no sessions and no locks.
func NewServer(cfg Config) *Server {
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Fence == nil {
		cfg.Fence = &FenceRow{}
	}
	return &Server{cfg: cfg, table: NewTable(), sessions: map[Session]*session{}, fence: cfg.Fence}
}

// Locks lists the user-level lock table.
func (s *Server) Locks() []LockRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.Rows()
}

// SetFence sets the fencing row (a restarted server keeps its tables).
func (s *Server) SetFence(version, value int64) {
	s.fence.Set(version, value)
}

// Fence is the fencing row: its version and value.
func (s *Server) Fence() (version, value int64) {
	return s.fence.Get()
}

// Sessions lists the open sessions' ids in order.
func (s *Server) Sessions() []Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []Session
	for id := Session(1); id <= s.next; id++ {
		if s.sessions[id] != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// session is one client connection's server state.
type session struct {
	id          Session
	conn        net.Conn // the raw connection, closed by wait_timeout
	waitTimeout time.Duration
	wake        chan int  // the waiting GET_LOCK's result: 1 granted, 0 timed out
	idleAt      time.Time // when wait_timeout closes the session; zero when not idle
	warnings    uint16
	ended       bool
	schema      string        // the default database (COM_INIT_DB, or named at connect)
	gone        chan struct{} // closed when the client's connection fails
}

// Serve runs one client connection until the client quits or the
// connection fails (or wait_timeout closes it), then ends the session,
// releasing its locks, and closes conn.
func (s *Server) Serve(conn net.Conn) error {
	s.mu.Lock()
	s.next++
	ss := &session{id: s.next, conn: conn, waitTimeout: s.cfg.WaitTimeout}
	s.sessions[ss.id] = ss
	s.mu.Unlock()

	done := make(chan struct{})
	h := &handler{srv: s, ss: ss, done: done}
	l, err := mysql.NewListenerWithConfig(mysql.ListenerConfig{
		Listener:                 &oneConn{conn: newWireConn(conn, s, ss)},
		AuthServer:               mysql.NewAuthServerNone(),
		Handler:                  h,
		ConnReadBufferSize:       mysql.DefaultConnBufferSize,
		AllowClearTextWithoutTLS: true,
	})
	if err != nil {
		conn.Close()
		s.endSession(ss)
		return err
	}
	l.ServerVersion = Version
	l.Accept() // hands conn to vitess's connection goroutine, then returns
	<-done
	return nil
}

// endSession releases what the session held and lets in whom that frees.
func (s *Server) endSession(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endSessionLocked(ss)
}

func (s *Server) endSessionLocked(ss *session) {
	if ss.ended {
		return
	}
	ss.ended = true
	ss.idleAt = time.Time{}
	s.deliver(ss.id, killed)
	delete(s.sessions, ss.id)
	s.settle(s.table.EndSession(ss.id))
}

// settle delivers grants to their waiting sessions and re-arms the
// timer. Caller holds mu.
func (s *Server) settle(grants []Waiter) {
	for _, g := range grants {
		s.deliver(g.Session, 1)
	}
	s.arm()
}

// arm sets the timer for the next instant something is due, unless it is
// already set for that instant or earlier (then it re-arms when it
// fires). Caller holds mu.
func (s *Server) arm() {
	next, ok := s.table.NextDeadline()
	for _, ss := range s.sessions {
		if !ss.idleAt.IsZero() && (!ok || ss.idleAt.Before(next)) {
			next, ok = ss.idleAt, true
		}
	}
	if !ok || s.stopped || (s.timer != nil && !s.timerAt.After(next)) {
		return
	}
	if s.timer != nil {
		s.timer()
	}
	s.timerAt = next
	s.timer = s.cfg.Clock.AfterFunc(next.Sub(s.cfg.Clock.Now()), s.fire)
}

func (s *Server) deliver(id Session, result int) {
	if ss := s.sessions[id]; ss != nil && ss.wake != nil {
		ss.wake <- result
		ss.wake = nil
	}
}

// fire does what is due now, in a fixed order: first the GET_LOCK waits
// whose deadline has come end with 0 (in deadline order, then by
// session), then the sessions idle for their wait_timeout are closed, by
// connection id. MariaDB closes an idle connection when its read times
// out after wait_timeout (sql_parse.cc do_command); the session ends here
// at once, releasing its locks, and its connection is closed.
func (s *Server) fire() {
	s.mu.Lock()
	s.timer = nil
	now := s.cfg.Clock.Now()
	for _, w := range s.table.Expire(now) {
		s.deliver(w.Session, 0)
	}
	var closing []*session
	for id := Session(1); id <= s.next; id++ {
		ss := s.sessions[id]
		if ss != nil && !ss.idleAt.IsZero() && !ss.idleAt.After(now) {
			s.endSessionLocked(ss)
			closing = append(closing, ss)
		}
	}
	s.arm()
	s.mu.Unlock()
	for _, ss := range closing {
		closeBecause(ss.conn, fmt.Sprintf("wait_timeout: idle %s", ss.waitTimeout))
	}
}

// sessionCloser is a connection that can be told why the server closed it
// (sim/dbnet's connections): a real socket has no trace to tell.
type sessionCloser interface {
	CloseBecause(why string) error
}

// closeBecause closes a connection the server ends on its own terms,
// telling a simulated network why, so that the trace shows the session
// and its locks ending here rather than when the client notices.
func closeBecause(c net.Conn, why string) {
	if sc, ok := c.(sessionCloser); ok {
		_ = sc.CloseBecause(why)
		return
	}
	_ = c.Close()
}

// Stop is the server process ending (a crash, the end of a run): the
// GET_LOCK waits end and no timer is set again; the sessions end as their
// connections fail. It may be called with a simulation's kernel held, so
// it does its work on a goroutine of its own.
func (s *Server) Stop() {
	go func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.stopped = true
		for id := Session(1); id <= s.next; id++ {
			if s.table.CancelWait(id) {
				s.deliver(id, killed)
			}
		}
		if s.timer != nil {
			s.timer()
			s.timer = nil
		}
	}()
}

// Results a waiting GET_LOCK can be woken with besides 1 and 0.
const (
	killedQuery = -1 // KILL QUERY: GET_LOCK returns NULL
	killed      = -2 // KILL CONNECTION: the connection is gone
)

// Kill is KILL CONNECTION id: the server closes the session's connection
// (the client sees the connection lost, also in the middle of a waiting
// GET_LOCK) and the session ends, freeing its locks. It reports whether
// the session existed.
func (s *Server) Kill(id Session) bool {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		return false
	}
	// Close first: MariaDB sends the killed session nothing, its client
	// sees the connection lost (CR_SERVER_LOST).
	closeBecause(ss.conn, "KILL CONNECTION")
	s.endSession(ss)
	return true
}

// KillQuery is KILL QUERY id: a waiting GET_LOCK of the session ends
// with NULL; the session stays. It reports whether the session existed.
func (s *Server) KillQuery(id Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[id] == nil {
		return false
	}
	if s.table.CancelWait(id) {
		s.deliver(id, killedQuery)
		s.settle(nil)
	}
	return true
}

// idleBegin starts the session's wait_timeout while the server waits for
// its next bytes; idleEnd stops it when they come.
func (s *Server) idleBegin(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss.ended || ss.waitTimeout <= 0 {
		return
	}
	ss.idleAt = s.cfg.Clock.Now().Add(ss.waitTimeout)
	s.arm()
}

func (s *Server) idleEnd(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.idleAt = time.Time{} // the timer, if set for it, fires and finds nothing due
}

// handler is vitess's mysql.Handler for one session.
type handler struct {
	srv  *Server
	ss   *session
	done chan struct{}
}

func (h *handler) NewConnection(c *mysql.Conn) {
	// vitess numbers connections per listener; the server numbers
	// sessions, and CONNECTION_ID() and IS_USED_LOCK must agree with
	// the handshake.
	c.ConnectionID = uint32(h.ss.id)
	c.StatusFlags |= mysql.ServerStatusAutocommit
}

func (h *handler) ConnectionClosed(c *mysql.Conn) {
	h.srv.endSession(h.ss)
	close(h.done)
}

func (h *handler) ConnectionAborted(c *mysql.Conn, reason string) error { return nil }
func (h *handler) ComInitDB(c *mysql.Conn, schemaName string) error {
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	h.ss.schema = schemaName
	return nil
}
func (h *handler) ComResetConnection(c *mysql.Conn) error {
	// COM_RESET_CONNECTION releases the session's user locks (MariaDB
	// 10.2.4+, like a new session but keeping the connection).
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	_, grants := h.srv.table.ReleaseAll(h.ss.id)
	h.srv.settle(grants)
	return nil
}
func (h *handler) ParserOptionsForConnection(c *mysql.Conn) (sqlparser.ParserOptions, error) {
	return sqlparser.ParserOptions{}, nil
}
func (h *handler) WarningCount(c *mysql.Conn) uint16 {
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	return h.ss.warnings
}

func (h *handler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	res, err := h.run(query, nil)
	if err != nil {
		return err
	}
	return callback(res, false)
}

func (h *handler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	return "", h.ComQuery(ctx, c, query, callback)
}

func (h *handler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	st, err := h.srv.parse(query)
	if err != nil {
		return nil, err
	}
	return fieldsOf(st), nil
}

func (h *handler) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	res, err := h.run(prepare.PrepareStmt, prepare.BindVars)
	if err != nil {
		return err
	}
	return callback(res)
}

// run parses and executes one statement.
func (h *handler) run(query string, binds map[string]*querypb.BindVariable) (*sqltypes.Result, error) {
	h.srv.mu.Lock()
	h.ss.warnings = 0
	h.srv.mu.Unlock()
	st, err := h.srv.parse(query)
	if err != nil {
		return nil, err
	}
	return (&executor{srv: h.srv, ss: h.ss, binds: binds}).statement(st)
}

// parse returns the statement of query, parsed once (statements are
// not changed by running them).
func (s *Server) parse(query string) (sqlparser.Statement, error) {
	s.mu.Lock()
	st, ok := s.parsed[query]
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := parse(query)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parsed == nil || len(s.parsed) >= 256 {
		s.parsed = map[string]sqlparser.Statement{}
	}
	s.parsed[query] = st
	return st, nil
}

// sqlError is a MySQL error packet's content.
func sqlError(code int, state, format string, args ...any) error {
	return mysql.NewSQLError(code, state, format, args...)
}
