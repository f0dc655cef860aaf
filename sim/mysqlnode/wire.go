package mysqlnode

import (
	"bytes"

	"net"
	"sync"
)

// wireConn is the connection as vitess sees it: reads arm wait_timeout,
// and the handshake's salt is made a function of the connection id.
//
// A pump goroutine reads the client's bytes as they come, so that the
// server learns at once when the client goes away, also while the session
// sits in a GET_LOCK wait and vitess reads nothing: MariaDB withdraws the
// wait of a client that disconnected (its MDL wait polls the socket), and
// go-sql-driver disconnects when the context of a waiting query ends.
type wireConn struct {
	net.Conn
	srv     *Server
	ss      *session
	writes  int
	greeted bool // the handshake has gone out (declineConnectAttrs)

	pumpOnce sync.Once
	out      []byte // the reply being written, sent when vitess reads again
	mu       sync.Mutex
	buf      []byte        // read ahead, not yet given to vitess
	err      error         // the client connection's read error, once seen
	more     chan struct{} // signalled when buf or err changes
}

func newWireConn(conn net.Conn, srv *Server, ss *session) *wireConn {
	ss.gone = make(chan struct{})
	return &wireConn{Conn: conn, srv: srv, ss: ss, more: make(chan struct{}, 1)}
}

func (w *wireConn) pump() {
	b := make([]byte, 16<<10)
	for {
		n, err := w.Conn.Read(b)
		w.mu.Lock()
		w.buf = append(w.buf, b[:n]...)
		w.err = err
		w.mu.Unlock()
		select {
		case w.more <- struct{}{}:
		default:
		}
		if err != nil {
			close(w.ss.gone)
			return
		}
	}
}

// flush sends the reply vitess has written since it last read: one
// segment per reply rather than one per Write (vitess writes each packet's
// header and body apart).
func (w *wireConn) flush() error {
	if len(w.out) == 0 {
		return nil
	}
	out := w.out
	w.out = nil
	if !w.greeted {
		w.greeted = true
		declineConnectAttrs(out)
	}
	if tap := w.srv.tap; tap != nil {
		tap(w.ss.id, out)
	}
	_, err := w.Conn.Write(out)
	return err
}

func (w *wireConn) Close() error {
	_ = w.flush()
	return w.Conn.Close()
}

func (w *wireConn) Read(p []byte) (int, error) {
	if err := w.flush(); err != nil {
		return 0, err
	}
	w.pumpOnce.Do(func() { go w.pump() })
	w.srv.idleBegin(w.ss)
	defer w.srv.idleEnd(w.ss)
	for {
		w.mu.Lock()
		if len(w.buf) > 0 {
			n := copy(p, w.buf)
			w.buf = w.buf[n:]
			w.mu.Unlock()
			return n, nil
		}
		if err := w.err; err != nil {
			w.mu.Unlock()
			return 0, err
		}
		w.mu.Unlock()
		<-w.more
	}
}

// Write keeps the bytes for flush, except that the handshake packet's
// salt, which vitess draws from crypto/rand, is replaced: a run must not
// depend on random bytes on the wire. Any salt is as good: the server
// accepts every client without a password (mysql.AuthServerNone), as a
// test server with skip-grant-tables does.
func (w *wireConn) Write(p []byte) (int, error) {
	if w.writes < 2 {
		w.writes++
		// Write 1 is the packet header, write 2 the HandshakeV10 body
		// (vitess writes them separately: conn.go writePacket).
		if w.writes == 2 {
			p = fixSalt(p, w.ss.id)
		}
	}
	w.out = append(w.out, p...)
	return len(p), nil
}

// fixSalt rewrites the 8 + 12 salt bytes of a HandshakeV10 body
// (protocol 10, version NUL-terminated, connection id, salt part 1,
// filler, capabilities, charset, status, capabilities, length, 10
// reserved, salt part 2, NUL, plugin name).
func fixSalt(body []byte, id Session) []byte {
	if len(body) == 0 || body[0] != 10 {
		return body
	}
	end := 1
	for end < len(body) && body[end] != 0 {
		end++
	}
	part1 := end + 1 + 4
	part2 := part1 + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10
	if part2+12 > len(body) {
		return body
	}
	out := append([]byte(nil), body...)
	salt := func(i int) byte { return 'A' + byte((int(id)*7+i)%26) }
	for i := 0; i < 8; i++ {
		out[part1+i] = salt(i)
	}
	for i := 0; i < 12; i++ {
		out[part2+i] = salt(8 + i)
	}
	return out
}

// oneConn is a net.Listener that accepts one connection, then reports
// itself closed so that vitess's accept loop returns.
type oneConn struct {
	conn net.Conn
	used bool
}

func (o *oneConn) Accept() (net.Conn, error) {
	if o.used {
		return nil, net.ErrClosed
	}
	o.used = true
	return o.conn, nil
}

func (o *oneConn) Close() error { return nil }

func (o *oneConn) Addr() net.Addr { return o.conn.LocalAddr() }

// declineConnectAttrs clears CLIENT_CONNECT_ATTRS (1<<20) in the server's
// Initial Handshake Packet (protocol version 10: header, version, server
// version string, connection id, 8 bytes of salt, a filler, the lower
// capability flags, charset, status, the upper capability flags; MariaDB's
// "Connection / Initial handshake packet"), so the client sends no
// connection attributes. go-sql-driver sends its process id among them
// (_pid, os.Getpid()): a run's bytes, and the work budget that counts them,
// then depended on which process ran it, by a byte per connection when
// the id had another number of digits (issue 32). The simulated server
// never read the attributes; a server without the capability is what
// MySQL before 5.6 was.
func declineConnectAttrs(pkt []byte) {
	const body = 4 // the packet header: length (3 bytes) and sequence id
	if len(pkt) <= body || pkt[body] != 10 {
		return
	}
	end := bytes.IndexByte(pkt[body+1:], 0)
	if end < 0 {
		return
	}
	upper := body + 1 + end + 1 + 4 + 8 + 1 + 2 + 1 + 2 // the upper capability flags
	if upper+2 > len(pkt) {
		return
	}
	pkt[upper] &^= 1 << (20 - 16)
}
