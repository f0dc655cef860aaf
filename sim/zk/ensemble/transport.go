package ensemble

import (
	"encoding/binary"
	"errors"
	"fmt"
	record "github.com/locklab/locklab/sim/event"
	"io"
	"net"
	"time"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/zk/wire"
)

// The transport: fake TCP connections between client hosts and servers,
// and the one loop that delivers every message.
//
// Determinism inside a synctest bubble: every message is an event with a
// virtual delivery time and a key (connection, sequence number). The loop
// first lets every goroutine woken at the current instant run until it
// blocks (synctest.Wait), then delivers one due event, then waits again.
// Events due at the same instant are delivered in key order, never in the
// order goroutines happened to write them. Latencies are positive, so a
// message written at instant t is delivered strictly later.

// Event kinds, in their order at one instant.
const (
	kindInternal = 0 // the ensemble's own timers and peer messages
	kindUp       = 1 // a client frame reaching its server
	kindDown     = 2 // a server frame reaching its client
	kindDepart   = 3 // world mode: a frame a client wrote leaves its host
)

// traceMsg feeds the run's digest with every delivery: instant,
// direction, connection, server and the bytes. Two runs with the same
// inputs must give the same digest.
func (e *Ensemble) traceMsg(dir string, c *Conn, msg []byte, fin bool) {
	fmt.Fprintf(e.digest, "%d %s %d %s %s %v %x\n", e.now().Sub(e.start), dir, c.id, c.host, c.server.name, fin, msg)
	if e.Trace != nil {
		fmt.Fprintf(e.Trace, "%v %s %s#%d %s fin=%v %x\n", e.now().Sub(e.start), dir, c.host, c.id, c.server.name, fin, msg)
	}
	e.stats.Messages++
}

// Digest is a hash of every message delivered so far.
func (e *Ensemble) Digest() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprintf("%x", e.digest.Sum(nil))
}

// Conn is the client end of one simulated TCP connection to a server; it
// is the net.Conn go-zookeeper's Dialer returns.
type Conn struct {
	e      *Ensemble
	id     int    // per host
	host   string // client host
	server *server

	// client side
	in       []byte
	notify   chan struct{}
	closed   bool  // the client closed it
	rdErr    error // set when the stream ends (EOF) or is reset
	deadline time.Time
	upSeq    int64
	partial  []byte

	// server side
	srvGone   bool // the server side is closed
	handshook bool
	session   *session
	fifo      []pendingReq
	busy      bool
	downSeq   int64
	stalled   []stalledMsg // held by a partition, in order
	lastTouch time.Time
	dropReply int32 // the xid whose reply a LoseNext rule eats
	// lastUp and lastDown are the arrival times of the last message each
	// way, so a delay that ends cannot reorder the stream.
	lastUp, lastDown time.Time

	// world mode (world.go): what the world's filters and observers are
	// shown of this connection's frames.
	sentConnect, gotConnect bool
	xids                    map[int32]string // request awaiting its reply: "CREATE /path"
	ephemeralXids           map[int32]bool   // CREATE requests of ephemeral nodes awaiting their reply
	xidPaths                map[int32]string // the path of a request awaiting its reply
}

type stalledMsg struct {
	up  bool
	msg []byte // nil for a FIN
	fin bool
	m   *sim.Message // world mode: the frame as the world saw it
}

var errReset = errors.New("zk sim: connection reset by peer")

type timeoutError struct{}

func (timeoutError) Error() string   { return "zk sim: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

type simAddr string

func (a simAddr) Network() string { return "tcp" }
func (a simAddr) String() string  { return string(a) }

func (c *Conn) signal() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// Read blocks on a channel of the bubble (durably, in synctest's sense)
// until data, end of stream, reset or the read deadline. In world mode a
// deadline that passes while the client's host is paused is seen when the
// host resumes, in its turn (sim/freeze.go): go-zookeeper's recvLoop is
// frozen with the rest of the process, so it cannot time out mid-pause.
func (c *Conn) Read(p []byte) (int, error) {
	thawed := false
	for {
		c.e.mu.Lock()
		if len(c.in) > 0 {
			n := copy(p, c.in)
			c.in = c.in[n:]
			c.e.mu.Unlock()
			return n, nil
		}
		if c.closed {
			c.e.mu.Unlock()
			return 0, net.ErrClosed
		}
		if c.rdErr != nil {
			err := c.rdErr
			c.e.mu.Unlock()
			return 0, err
		}
		dl := c.deadline
		c.e.mu.Unlock()
		var tc <-chan time.Time
		var timer *time.Timer
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 && c.e.w != nil && !thawed {
				thawed = true
				c.e.w.AwaitThawNamed(c.host, "zk "+c.stream()+" read")
				continue
			}
			if d <= 0 {
				return 0, &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}
			}
			timer = time.NewTimer(d)
			tc = timer.C
		}
		select {
		case <-c.notify:
		case <-tc:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// Write cuts the stream into frames and sends each as one message. In
// world mode the writing goroutine enters the world's kernel first and
// only then takes e.mu (the kernel's events take e.mu inside it, so the
// other order could deadlock); a dead connection fails at once, without
// the kernel.
func (c *Conn) Write(p []byte) (int, error) {
	e := c.e
	if e.w == nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		return c.write(p)
	}
	e.mu.Lock()
	err := c.writeErr()
	e.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := 0, error(errReset)
	e.w.ActFromNamed(c.host, "zk "+c.stream(), func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		n, err = c.write(p)
	})
	return n, err
}

func (c *Conn) writeErr() error {
	if c.closed {
		return net.ErrClosed
	}
	if c.rdErr == errReset || c.e.stopping {
		return errReset
	}
	return nil
}

func (c *Conn) write(p []byte) (int, error) {
	if err := c.writeErr(); err != nil {
		return 0, err
	}
	c.partial = append(c.partial, p...)
	for {
		body, rest, ok, err := wire.SplitFrame(c.partial, maxFrame)
		if err != nil {
			c.partial = nil
			return 0, err
		}
		if !ok {
			break
		}
		msg := append([]byte{}, body...)
		c.partial = append([]byte{}, rest...)
		c.sendUp(msg, false)
	}
	return len(p), nil
}

func (c *Conn) sendUp(msg []byte, fin bool) {
	c.upSeq++
	e := c.e
	if e.w != nil {
		// The frame leaves at an event of its own, keyed by connection
		// and number: the world's filters judge it (and count it) in
		// that order, not in the order racing writers entered.
		seq := c.upSeq
		e.at(e.now(), kindDepart, c.host, int64(c.id)<<32|seq, func() { c.departUp(msg, fin, seq) })
		return
	}
	at := c.arrival(&c.lastUp, 0)
	e.at(at, kindUp, c.host, int64(c.id)<<32|c.upSeq, func() { c.deliverUp(msg, fin, nil) })
}

// arrival is when a message sent now on this connection arrives: the
// client latency plus any delay fault on its host (and extra, a world
// filter's delay), never before the message sent before it (a stream
// keeps its order, as TCP does).
func (c *Conn) arrival(last *time.Time, extra time.Duration) time.Time {
	at := c.e.now().Add(c.e.cfg.ClientLatency + c.e.delays[c.host] + extra)
	if at.Before(*last) {
		at = *last
	}
	*last = at
	return at
}

// Delay adds d to the one-way latency of every message to and from host
// (0 ends the fault). Messages stay in order; a delay beyond the client's
// read timeout makes it give up on the connection and reconnect.
func (e *Ensemble) Delay(host string, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d == 0 {
		delete(e.delays, host)
		return
	}
	e.delays[host] = d
}

func (c *Conn) deliverUp(msg []byte, fin bool, m *sim.Message) {
	c.e.traceMsg("up", c, msg, fin)
	if c.heldOrGone(true, msg, fin, m) {
		return
	}
	// The world's observers (fault triggers) see the frame before the
	// server acts on it; a fault they fire may have cut or reset it.
	if c.e.observe(m) && c.heldOrGone(true, msg, fin, m) {
		return
	}
	c.e.delivered(c, m, fin, true)
	if fin {
		c.server.dropConn(c)
		return
	}
	if c.handshook && len(msg) >= 8 {
		xid, op := int32(binary.BigEndian.Uint32(msg)), int32(binary.BigEndian.Uint32(msg[4:]))
		for i, r := range c.e.lossRules {
			if r.host != c.host || r.op != op {
				continue
			}
			c.e.lossRules = append(c.e.lossRules[:i], c.e.lossRules[i+1:]...)
			if r.crashLeader {
				c.server.handleFrame(c, msg)
				if c.e.leader >= 0 {
					c.e.lost = append(c.e.lost, fmt.Sprintf("%v leader %s crashed as %s's op %d xid %d arrived", c.e.now().Sub(c.e.start), c.e.servers[c.e.leader].name, c.host, op, xid))
					c.e.crash(c.e.servers[c.e.leader].name)
				}
				return
			}
			c.e.lost = append(c.e.lost, fmt.Sprintf("%v %s op %d xid %d (%s)", c.e.now().Sub(c.e.start), c.host, op, xid, map[bool]string{false: "request lost", true: "reply lost"}[r.reply]))
			if !r.reply {
				c.reset("request lost (LoseNext)")
				return
			}
			c.dropReply = xid
			break
		}
	}
	c.server.handleFrame(c, msg)
}

type lossRule struct {
	host        string
	op          int32
	reply       bool
	crashLeader bool
}

// CrashLeaderOn arms a one-shot fault: when the next request with this op
// code from host reaches its server, the leader crashes.
func (e *Ensemble) CrashLeaderOn(host string, op int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lossRules = append(e.lossRules, lossRule{host: host, op: op, crashLeader: true})
}

// LoseNext arms a one-shot fault on the next request with this op code
// from host: the request (reply=false: it never takes effect) or its reply
// (reply=true: it takes effect, the client never hears) is lost, and, as
// with TCP, the connection breaks: the client sees ConnectionLoss and
// reconnects.
func (e *Ensemble) LoseNext(host string, op int32, reply bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lossRules = append(e.lossRules, lossRule{host: host, op: op, reply: reply})
}

// sendDown sends a frame (or, with fin, the end of the stream) from the
// server to the client.
func (c *Conn) sendDown(frame []byte, fin bool) {
	if c.dropReply != 0 && len(frame) >= 8 && int32(binary.BigEndian.Uint32(frame[4:])) == c.dropReply {
		c.dropReply = 0
		c.reset("reply lost (LoseNext)")
		return
	}
	var m *sim.Message
	var extra time.Duration
	if c.e.w != nil && !fin {
		var drop bool
		m, drop, extra = c.judgeDown(frame)
		if drop {
			return
		}
	}
	c.scheduleDown(frame, fin, m, extra)
}

func (c *Conn) scheduleDown(frame []byte, fin bool, m *sim.Message, extra time.Duration) {
	c.downSeq++
	e := c.e
	at := c.arrival(&c.lastDown, extra)
	e.at(at, kindDown, c.host, int64(c.id)<<32|c.downSeq, func() { c.deliverDown(frame, fin, m) })
}

func (c *Conn) deliverDown(frame []byte, fin bool, m *sim.Message) {
	c.e.traceMsg("down", c, frame, fin)
	if c.heldOrGone(false, frame, fin, m) {
		return
	}
	if c.e.observe(m) && c.heldOrGone(false, frame, fin, m) {
		return
	}
	c.e.delivered(c, m, fin, false)
	if fin {
		c.rdErr = errEOF
	} else {
		c.in = append(c.in, frame...)
	}
	c.signal()
}

var errEOF = io.EOF

// heldOrGone is true when an arriving frame goes no further: its
// receiving end is gone, or a cut (or a pause) holds it, behind any frame
// held before it.
func (c *Conn) heldOrGone(up bool, msg []byte, fin bool, m *sim.Message) bool {
	if up && c.srvGone || !up && (c.closed || c.rdErr != nil) {
		delete(c.e.observed, m)
		return true
	}
	if c.e.cut(c.host, c.server.name) || hasStalled(c.stalled, up) {
		c.stalled = append(c.stalled, stalledMsg{up: up, msg: msg, fin: fin, m: m})
		if m != nil {
			if c.e.tracing() {
				c.e.record(c.host, c.frameEvent(record.FrameHeld, m))
			}
		}
		return true
	}
	return false
}

func hasStalled(s []stalledMsg, up bool) bool {
	for _, m := range s {
		if m.up == up {
			return true
		}
	}
	return false
}

// release re-sends the messages a partition held, in their order, once
// the link heals (TCP retransmission).
func (c *Conn) release() {
	held := c.stalled
	c.stalled = nil
	for _, m := range held {
		m := m
		if c.e.w != nil {
			c.resend(m)
			continue
		}
		if m.up {
			c.sendUp(m.msg, m.fin)
		} else {
			c.sendDown(m.msg, m.fin)
		}
	}
}

// reset breaks the connection at once on both ends, as a TCP RST does: the
// client's next read fails, the server forgets the connection. why goes
// into the world's trace ("" for none).
func (c *Conn) reset(why string) {
	if why != "" && c.rdErr == nil && !c.closed {
		if c.e.tracing() {
			ev := c.connEvent(record.ConnReset)
			ev.Reason = why
			c.e.record(c.host, ev)
		}
	}
	if c.rdErr == nil {
		c.rdErr = errReset
	}
	for _, h := range c.stalled {
		delete(c.e.observed, h.m)
	}
	c.stalled = nil
	c.signal()
	if !c.srvGone {
		c.server.dropConn(c)
	}
}

// serverClose is the server closing the socket: the client reads what was
// already sent, then end of stream.
func (c *Conn) serverClose() {
	if c.srvGone {
		return
	}
	if c.e.tracing() {
		c.e.record(c.server.name, c.connEvent(record.ConnServerClosed))
	}
	c.server.dropConn(c)
	c.sendDown(nil, true)
}

// Close is the client closing the socket. In world mode the closing
// goroutine enters the kernel first, as Write does; a connection that is
// already dead closes without it.
func (c *Conn) Close() error {
	e := c.e
	if e.w == nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		c.close()
		return nil
	}
	e.mu.Lock()
	quiet := c.closed || c.srvGone || c.rdErr == errReset || e.stopping
	if quiet && !c.closed {
		c.closed = true
		c.signal()
	}
	e.mu.Unlock()
	if quiet {
		return nil
	}
	e.w.ActFromNamed(c.host, "zk "+c.stream()+" close", func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		c.close()
	})
	e.mu.Lock()
	if !c.closed { // the run ended before the close got in
		c.closed = true
		c.signal()
	}
	e.mu.Unlock()
	return nil
}

func (c *Conn) close() {
	if c.closed {
		return
	}
	c.closed = true
	c.signal()
	if !c.srvGone && c.rdErr != errReset {
		c.sendUp(nil, true)
	}
}

func (c *Conn) LocalAddr() net.Addr  { return simAddr(c.host + ":40000") }
func (c *Conn) RemoteAddr() net.Addr { return simAddr(c.server.name + ":2181") }
func (c *Conn) SetDeadline(t time.Time) error {
	return c.SetReadDeadline(t)
}
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.e.mu.Lock()
	c.deadline = t
	c.e.mu.Unlock()
	c.signal()
	return nil
}

// SetWriteDeadline is a no-op: writes never block in the simulation (the
// socket buffer is unbounded).
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }
