package pgnode

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Bouncer is a connection pooler between clients and a server, as
// PgBouncer (https://www.pgbouncer.org/config.html) pools them:
//
//   - pool_mode session: a client gets a server connection at its first
//     statement and keeps it until it disconnects; then the server
//     connection gets server_reset_query (DISCARD ALL, which releases
//     session advisory locks) and goes back to the pool.
//   - pool_mode transaction: a client gets a server connection for one
//     transaction — a Query or an extended-protocol round up to Sync,
//     outside a BEGIN block, or everything from BEGIN to COMMIT — and it
//     goes back to the pool when the server reports the transaction over
//     (ReadyForQuery 'I'). server_reset_query runs then only with
//     server_reset_query_always. A session advisory lock taken in one
//     transaction stays on that server connection, which the pool hands to
//     the next client (pgbouncer#102).
//   - The pool hands out the most recently used idle server connection
//     first (server_round_robin = 0, LIFO), opens new ones up to
//     PoolSize, and a client waits when all are busy.
//   - server_lifetime: a server connection older than this is closed
//     when it comes back to the pool, not reused.
//
// It speaks the protocol on both sides with pgproto3: a Backend towards
// each client (startup answered by the pooler itself, trust auth) and a
// Frontend towards each server connection. Cancel requests are not
// forwarded.
type Bouncer struct {
	Transaction    bool // pool_mode transaction (else session)
	PoolSize       int
	ResetQuery     string // server_reset_query; "" for none
	ResetAlways    bool   // server_reset_query_always
	ServerLifetime time.Duration
	// Dial opens a server connection (over the simulated network).
	Dial func() (net.Conn, error)

	mu      sync.Mutex
	idle    []*serverConn // LIFO: the last is handed out first
	open    int
	waiters []chan *serverConn
	stopped bool
	stop    chan struct{}
	// Stats
	ServerConns int // server connections opened
}

type serverConn struct {
	conn    net.Conn
	fe      *pgproto3.Frontend
	created time.Time
}

var errPoolStopped = errors.New("pooler stopped")

// Stop ends the pooler's waits and closes its idle server connections (a
// crash, or the run's end).
func (b *Bouncer) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, sc := range b.idle {
		sc.conn.Close()
	}
	b.idle = nil
	if b.stop == nil {
		b.stop = make(chan struct{})
	}
	if !b.stopped {
		b.stopped = true
		close(b.stop)
	}
}

func (b *Bouncer) isStopped() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

func (b *Bouncer) stopCh() chan struct{} {
	if b.stop == nil {
		b.stop = make(chan struct{})
	}
	return b.stop
}

// acquire hands out a server connection: the most recent idle one, a new
// one while the pool has room, or the next one released.
func (b *Bouncer) acquire() (*serverConn, error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil, errPoolStopped
	}
	if n := len(b.idle); n > 0 {
		sc := b.idle[n-1]
		b.idle = b.idle[:n-1]
		b.mu.Unlock()
		return sc, nil
	}
	size := b.PoolSize
	if size <= 0 {
		size = 20
	}
	if b.open < size {
		b.open++
		b.ServerConns++
		b.mu.Unlock()
		sc, err := b.connect()
		if err != nil {
			b.mu.Lock()
			b.open--
			b.mu.Unlock()
		}
		return sc, err
	}
	ch := make(chan *serverConn, 1)
	b.waiters = append(b.waiters, ch)
	stop := b.stopCh()
	b.mu.Unlock()
	select {
	case sc := <-ch:
		return sc, nil
	case <-stop:
		return nil, errPoolStopped
	}
}

// connect opens a server connection and logs in.
func (b *Bouncer) connect() (*serverConn, error) {
	conn, err := b.Dial()
	if err != nil {
		return nil, err
	}
	fe := pgproto3.NewFrontend(conn, conn)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "pgbouncer", "database": "lab"}})
	if err := fe.Flush(); err != nil {
		conn.Close()
		return nil, err
	}
	for {
		msg, err := fe.Receive()
		if err != nil {
			conn.Close()
			return nil, err
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			conn.Close()
			return nil, errors.New(m.Message)
		case *pgproto3.ReadyForQuery:
			return &serverConn{conn: conn, fe: fe, created: time.Now()}, nil
		}
	}
}

// mapper is a client connection that records the pooler's hand-overs
// (sim/dbnet's ends): which server connection serves it, from when to
// when.
type mapper interface {
	Mapped(server net.Conn, what string)
}

func mapped(client net.Conn, sc *serverConn, what string) {
	if m, ok := client.(mapper); ok && sc != nil {
		m.Mapped(sc.conn, what)
	}
}

// release gives client's server connection back: reset first if the mode
// says so, closed if it failed or outlived server_lifetime, else to the
// next waiting client or the idle list. Each step is recorded on client.
func (b *Bouncer) release(client net.Conn, sc *serverConn, reset, broken bool) {
	if !broken && reset && b.ResetQuery != "" {
		mapped(client, sc, "reset")
		broken = sc.run(b.ResetQuery) != nil
	}
	if !broken && b.ServerLifetime > 0 && time.Since(sc.created) >= b.ServerLifetime {
		broken = true
	}
	if broken || b.isStopped() {
		mapped(client, sc, "closed")
	} else {
		mapped(client, sc, "released")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if broken || b.stopped {
		sc.conn.Close()
		b.open--
		return
	}
	if len(b.waiters) > 0 {
		ch := b.waiters[0]
		b.waiters = b.waiters[1:]
		ch <- sc
		return
	}
	b.idle = append(b.idle, sc)
}

// run sends one query on a server connection and reads to its end.
func (sc *serverConn) run(q string) error {
	sc.fe.Send(&pgproto3.Query{String: q})
	if err := sc.fe.Flush(); err != nil {
		return err
	}
	for {
		msg, err := sc.fe.Receive()
		if err != nil {
			return err
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			return nil
		}
	}
}

// Serve is one client connection of the pooler.
func (b *Bouncer) Serve(conn net.Conn) error {
	defer conn.Close()
	be := pgproto3.NewBackend(conn, conn)
	// The pooler answers the startup itself; its own key data names no
	// server backend, so a cancel request through it reaches nobody.
	ss := &session{srv: NewServer(), id: 1}
	if err := startup(conn, be, ss); err != nil {
		return err
	}
	var sc *serverConn
	inTx := false // the server said the transaction is open ('T' or 'E')
	defer func() {
		if sc != nil {
			// The client left: in session mode the reset query cleans
			// the server connection up; a connection left inside a
			// transaction is closed (PgBouncer: "client disconnect while
			// server was not ready").
			b.release(conn, sc, !b.Transaction || b.ResetAlways, inTx)
		}
	}()
	for {
		msg, err := be.Receive()
		if err != nil {
			return nil
		}
		if _, ok := msg.(*pgproto3.Terminate); ok {
			return nil
		}
		if sc == nil {
			if sc, err = b.acquire(); err != nil {
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08006", Message: "pgbouncer cannot connect to server"})
				_ = be.Flush()
				return nil
			}
			mapped(conn, sc, "assigned")
		}
		sc.fe.Send(msg)
		switch msg.(type) {
		case *pgproto3.Query, *pgproto3.Sync, *pgproto3.Flush:
		default:
			continue // the extended protocol's round goes on
		}
		if err := sc.fe.Flush(); err != nil {
			return b.serverLost(conn, be, &sc)
		}
		if _, flush := msg.(*pgproto3.Flush); flush {
			continue
		}
		// Relay the server's answer up to ReadyForQuery.
		for {
			reply, err := sc.fe.Receive()
			if err != nil {
				return b.serverLost(conn, be, &sc)
			}
			be.Send(reply)
			if r, ok := reply.(*pgproto3.ReadyForQuery); ok {
				inTx = r.TxStatus != 'I'
				break
			}
		}
		// The server connection goes back to the pool as soon as the
		// transaction is over, before the answer reaches the client — or,
		// with a reset query to run first, while the answer travels.
		done := b.Transaction && !inTx
		if done && !b.ResetAlways {
			b.release(conn, sc, false, false)
			sc = nil
		}
		err = be.Flush()
		if done && sc != nil {
			b.release(conn, sc, true, false)
			sc = nil
		}
		if err != nil {
			return nil
		}
	}
}

// serverLost tells the client its server connection broke and closes it,
// as PgBouncer does ("server conn crashed?").
func (b *Bouncer) serverLost(client net.Conn, be *pgproto3.Backend, sc **serverConn) error {
	b.release(client, *sc, false, true)
	*sc = nil
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08006", Message: "server conn crashed?"})
	_ = be.Flush()
	return nil
}
