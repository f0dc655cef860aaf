package live

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// frameReader reads one whole protocol message from a stream and names its
// operation (for a fault's op pattern). first is true for the first
// message of the direction (a startup or connect message, framed apart).
type frameReader func(r *bufio.Reader, first bool) (raw []byte, op string, err error)

// streamLink is the way from one client to one server whose protocol is a
// stream of messages in each direction rather than one reply per request
// (ZooKeeper's, Postgres's): each message is read whole and passed through
// the fabric. A message the fabric loses breaks the connection, as a lost
// message breaks a TCP connection that a timeout then ends (the
// simulation's rule for these protocols, docs/design.md "Fidelity
// rules"); a partition makes new connections fail at once. A paused
// client's proxy neither sends for it nor delivers to it until it
// resumes. The client library keeps its own timeouts (go-zookeeper's read
// timeout, pgx's): they run on real time, and a paused client's library
// goroutines are not stopped (docs/live.md).
type streamLink struct {
	client *clientHost
	server string // the scenario's name for the server (zk1, db1, pgbouncer)
	addr   func() string
	fabric *fabric
	// frames makes the two directions' readers of one connection (they
	// may share state: a ZooKeeper reply names its request only by xid).
	frames func() (requests, replies frameReader)
	count  func()
}

// dial is the client library's dialer for the link.
func (l *streamLink) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	if l.client.isCrashed() {
		return nil, errors.New("client crashed")
	}
	if l.fabric.cutNow(l.client.Name, l.server) {
		return nil, errors.New("connect: partitioned from " + l.server)
	}
	up, err := net.DialTimeout("tcp", l.addr(), time.Second)
	if err != nil {
		return nil, err
	}
	app, mine := net.Pipe()
	go l.serve(mine, up)
	return app, nil
}

func (l *streamLink) serve(app, up net.Conn) {
	var once sync.Once
	closeAll := func() { once.Do(func() { app.Close(); up.Close() }) }
	defer closeAll()
	requests, replies := l.frames()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer closeAll()
		l.copy(bufio.NewReader(up), app, l.server, l.client.Name, "reply", replies)
	}()
	l.copy(bufio.NewReader(app), up, l.client.Name, l.server, "request", requests)
	closeAll()
	<-done
}

// copy carries one direction's messages.
func (l *streamLink) copy(from *bufio.Reader, to io.Writer, src, dst, dir string, read frameReader) {
	for first := true; ; first = false {
		raw, op, err := read(from, first)
		if err != nil {
			return
		}
		if !l.client.waitRunning() {
			return
		}
		l.count()
		fate := l.fabric.pass(message{from: src, to: dst, op: op, dir: dir})
		if fate.drop {
			return // the connection breaks
		}
		if fate.delay > 0 {
			time.Sleep(fate.delay)
		}
		if !l.client.waitRunning() {
			return
		}
		if _, err := to.Write(raw); err != nil {
			return
		}
	}
}

// lengthPrefixed reads a message framed by a 4-byte big-endian length
// that counts what follows it (ZooKeeper's jute framing) or itself too
// (Postgres's, with self true).
func lengthPrefixed(r *bufio.Reader, typeByte, self bool) ([]byte, byte, error) {
	var head []byte
	var typ byte
	if typeByte {
		b, err := r.ReadByte()
		if err != nil {
			return nil, 0, err
		}
		typ, head = b, []byte{b}
	}
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, 0, err
	}
	size := int(binary.BigEndian.Uint32(n[:]))
	if self {
		size -= 4
	}
	if size < 0 || size > 64<<20 {
		return nil, 0, errors.New("frame: bad length")
	}
	raw := make([]byte, len(head)+4+size)
	copy(raw, head)
	copy(raw[len(head):], n[:])
	if _, err := io.ReadFull(r, raw[len(head)+4:]); err != nil {
		return nil, 0, err
	}
	return raw, typ, nil
}
