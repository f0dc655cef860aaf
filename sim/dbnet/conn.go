package dbnet

// One TCP connection between a client host and a database server: two
// ends (net.Conn), the segments between them, and the server's keepalive.
//
// Lock order: the kernel, then an end's mu. A goroutine writes or closes
// through World.Notify (it enters the kernel, which schedules the
// segment); Read takes the end's mu alone and waits on a channel of the
// bubble, outside every lock.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

var (
	errHostDown  = errors.New("simulated connection: client host crashed")
	errReset     = errors.New("read: connection reset by peer")
	errKeepalive = errors.New("connection timed out (keepalive)")
	errCrashed   = errors.New("server process crashed")
)

type segKind int

const (
	segData segKind = iota
	segFin
	segRst
)

type segment struct {
	from  *end
	kind  segKind
	data  []byte
	m     *sim.Message
	facts []event.Event
	seq   int
	why   string // segRst: the reason
}

// link is one connection.
type link struct {
	n      *Net
	srv    *Server
	svc    Service
	id     string // client#dial>server
	codec  Codec
	client *end
	server *end

	upSeq, downSeq     int
	lastUp, lastDown   time.Duration // FIFO: the last arrival per direction
	stalled            []*segment
	lastHeard          time.Duration // the server last heard from the client
	probes             int           // unanswered keepalive probes
	rstSent, sessionUp bool
}

// end is one side of a connection, the net.Conn its owner reads and
// writes.
type end struct {
	l        *link
	host     *sim.Host
	isClient bool

	mu     sync.Mutex
	rbuf   []byte
	eof    bool
	err    error // the connection failed (reset, keepalive, crash, run end)
	closed bool  // this side called Close
	ready  chan struct{}
	rdl    time.Time
	wdl    time.Time
	timer  *time.Timer
}

func newEnd(l *link, h *sim.Host, client bool) *end {
	return &end{l: l, host: h, isClient: client, ready: make(chan struct{}, 1)}
}

func (e *end) peer() *end {
	if e.isClient {
		return e.l.server
	}
	return e.l.client
}

func (e *end) signal() {
	select {
	case e.ready <- struct{}{}:
	default:
	}
}

// fail makes the connection fail on this side (kernel held or not).
func (e *end) fail(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
	e.signal()
}

func (e *end) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err != nil || e.closed
}

// Read waits for data, the end of the stream, a failure or the read
// deadline. A deadline that passes while the end's host is paused is seen
// when the host resumes, in its turn (sim/freeze.go): the driver's reading
// goroutine is frozen with the rest of the process.
func (e *end) Read(b []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	thawed := false
	for {
		switch {
		case len(e.rbuf) > 0:
			n := copy(b, e.rbuf)
			e.rbuf = e.rbuf[n:]
			return n, nil
		case e.closed:
			return 0, net.ErrClosed
		case e.err != nil:
			return 0, e.err
		case e.eof:
			return 0, io.EOF
		case !e.rdl.IsZero() && !time.Now().Before(e.rdl) && thawed:
			return 0, os.ErrDeadlineExceeded
		case !e.rdl.IsZero() && !time.Now().Before(e.rdl):
			thawed = true
			e.mu.Unlock()
			e.l.n.w.AwaitThaw(e.host, "db "+e.l.id+e.dir()+" read")
			e.mu.Lock()
			continue
		}
		e.mu.Unlock()
		<-e.ready
		e.mu.Lock()
	}
}

func (e *end) Write(b []byte) (int, error) {
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return 0, net.ErrClosed
	case e.err != nil:
		err := e.err
		e.mu.Unlock()
		return 0, err
	case !e.wdl.IsZero() && !time.Now().Before(e.wdl):
		e.mu.Unlock()
		return 0, os.ErrDeadlineExceeded
	}
	e.mu.Unlock()
	data := append([]byte(nil), b...)
	err := errEnded
	e.l.n.w.ActFrom(e.host, "db "+e.l.id+e.dir(), func() { err = e.l.send(e, segData, data, "") })
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

func (e *end) dir() string {
	if e.isClient {
		return " up"
	}
	return " down"
}

// Close sends FIN (the peer reads EOF once the data before it arrived).
func (e *end) Close() error { return e.close("") }

// CloseBecause is the server ending a session on its own terms and closing
// its connection (MariaDB's wait_timeout, KILL CONNECTION): the session and
// its locks end at this moment, at the server, for the reason given —
// not later, when the client notices and closes its side. A server that
// closes with plain Close after its client went (Postgres after Terminate)
// leaves the session's end to the client's FIN, as before.
func (e *end) CloseBecause(why string) error { return e.close(why) }

func (e *end) close(why string) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	alive := e.err == nil
	e.mu.Unlock()
	e.signal()
	if alive {
		e.l.n.w.ActFrom(e.host, "db "+e.l.id+e.dir(), func() {
			if why != "" && !e.isClient {
				e.l.sessionEnded(why)
			}
			_ = e.l.send(e, segFin, nil, "")
		})
	}
	return nil
}

// Mapped records a pooler's hand-over (event.DBPoolMapped): the client's
// connection whose server end e is is served by to, the pooler's own
// connection to a database, or no longer (what: "assigned", "reset",
// "released", "closed"). The pooler calls it (sim/pgnode/bouncer.go), so
// the mapping is a fact of the run, not inferred from statement order.
func (e *end) Mapped(to net.Conn, what string) {
	t, ok := to.(*end)
	if !ok || e.isClient {
		return
	}
	e.l.n.w.ActFrom(e.host, "db map "+e.l.id, func() {
		if e.l.n.w.Tracing() {
			e.l.n.w.Record(e.host.Name, event.Event{Kind: event.DBPoolMapped, Node: e.host.Name, Client: e.l.client.host.Name, Conn: e.l.id, Session: t.l.id, Reason: what})
		}
	})
}

type addr string

func (a addr) Network() string { return "tcp" }
func (a addr) String() string  { return string(a) }

func (e *end) LocalAddr() net.Addr  { return addr(e.host.Name + ":0") }
func (e *end) RemoteAddr() net.Addr { return addr(e.peer().host.Name + ":0") }

func (e *end) SetDeadline(t time.Time) error {
	e.SetReadDeadline(t)
	return e.SetWriteDeadline(t)
}

// SetReadDeadline wakes a blocked Read at t, on the bubble's clock (the
// drivers bound their waits by context deadlines, and interrupt a read
// by a deadline in the past when a context is cancelled).
func (e *end) SetReadDeadline(t time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rdl = t
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	if !t.IsZero() {
		if d := time.Until(t); d > 0 {
			e.timer = time.AfterFunc(d, e.signal)
		} else {
			e.signal()
		}
	}
	return nil
}

func (e *end) SetWriteDeadline(t time.Time) error {
	e.mu.Lock()
	e.wdl = t
	e.mu.Unlock()
	return nil
}

// send puts a segment on the wire from end e (kernel held).
func (l *link) send(e *end, kind segKind, data []byte, why string) error {
	if kind == segData {
		e.mu.Lock()
		err := e.err
		e.mu.Unlock()
		if err != nil {
			return err
		}
	}
	s := &segment{from: e, kind: kind, data: data, why: why}
	if e.isClient {
		l.upSeq++
		s.seq = l.upSeq
	} else {
		l.downSeq++
		s.seq = l.downSeq
	}
	if kind == segData {
		s.m = l.message(e, data, &s.facts)
		// What the server did (a lock granted, an unlock that found
		// nothing) happened when it answered, whether or not the answer
		// ever arrives. A pooler only relays the database's answers,
		// whose facts the database's own connection records.
		if l.n.w.Tracing() && !l.srv.Relay {
			for _, f := range s.facts {
				f.Conn, f.Client, f.Node = l.id, l.client.host.Name, l.srv.Name
				l.n.w.Record(l.srv.Name, f)
			}
		}
	}
	if l.blocked(e) {
		l.stall(s)
		return nil
	}
	l.depart(s)
	return nil
}

// message describes a data segment for the fault filters and the trace.
func (l *link) message(e *end, data []byte, facts *[]event.Event) *sim.Message {
	to := e.peer()
	m := &sim.Message{From: e.host.Name, To: to.host.Name, Client: l.client.host.Name, Stream: "db " + l.id, Size: len(data)}
	m.Op, m.Summary = "?", fmt.Sprintf("%d bytes", len(data))
	if e.isClient {
		m.Dir = sim.Request
		if l.codec != nil {
			m.Op, m.Summary = l.codec.Request(data)
		}
	} else {
		m.Dir = sim.Reply
		if l.codec != nil {
			m.Op, m.Summary, *facts = l.codec.Reply(data)
		}
	}
	return m
}

// blocked says whether a segment from e cannot travel now: the link is
// cut (either way: TCP needs the acknowledgements back) or a host is
// paused.
func (l *link) blocked(e *end) bool {
	to := e.peer()
	return !l.n.reachable(e.host, to.host) || e.host.Paused() || to.host.Paused()
}

func (l *link) stall(s *segment) {
	l.stalled = append(l.stalled, s)
	if s.m != nil {
		l.n.w.Record(s.from.host.Name, event.Event{Kind: event.DBSegmentHeld, Conn: l.id, Client: l.client.host.Name, Node: l.srv.Name, Command: s.m.Summary, Op: s.m.Op, Dir: string(s.m.Dir)})
	}
}

// releaseStalled sends the held segments, in order, once nothing blocks
// them (kernel held).
func (l *link) releaseStalled() {
	if len(l.stalled) == 0 || l.blocked(l.client) {
		return
	}
	held := l.stalled
	l.stalled = nil
	for _, s := range held {
		l.depart(s)
	}
}

// key orders a segment among events due at one instant: "db " and the
// link, the direction and the segment's number, eight digits wide
// (fmt's %08d, appended without fmt: it was a twentieth of a pgx run).
func (l *link) key(s *segment) string {
	b := make([]byte, 0, 3+len(l.id)+5+1+8)
	b = append(b, "db "...)
	b = append(b, l.id...)
	b = append(b, s.from.dir()...)
	b = append(b, ' ')
	return string(appendPadded8(b, s.seq))
}

// appendPadded8 appends n as fmt's %08d does.
func appendPadded8(b []byte, n int) []byte {
	if n < 0 {
		return fmt.Appendf(b, "%08d", n)
	}
	d := strconv.Itoa(n)
	for i := len(d); i < 8; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// depart judges a segment and schedules its arrival, after the previous
// segment of its direction (TCP's order).
func (l *link) depart(s *segment) {
	n := l.n
	w := n.w
	var delay time.Duration
	if s.m != nil {
		drop, d, why := w.Net.Judge(s.m)
		if drop {
			at := l.arrival(s, 0)
			w.AtKey(at, l.key(s), func() {
				l.resetBoth(fmt.Sprintf("%s %s lost (%s)", s.m.Dir, s.m.Summary, why))
			})
			return
		}
		delay = d
	}
	at := l.arrival(s, delay)
	w.AtKey(at, l.key(s), func() { l.deliver(s) })
}

func (l *link) arrival(s *segment, extra time.Duration) time.Duration {
	at := l.n.w.Now() + l.n.latency(l.key(s)) + extra
	last := &l.lastUp
	if !s.from.isClient {
		last = &l.lastDown
	}
	if at < *last {
		at = *last
	}
	*last = at
	return at
}

// deliver hands a segment to its receiving end (kernel held).
func (l *link) deliver(s *segment) {
	n := l.n
	if n.ended {
		return
	}
	to := s.from.peer()
	if l.blocked(s.from) {
		// Cut or paused while in flight: TCP retransmits it later.
		l.stall(s)
		return
	}
	if !to.isClient {
		l.lastHeard, l.probes = n.w.Now(), 0
	}
	switch s.kind {
	case segRst:
		to.fail(errReset)
		n.w.Record(to.host.Name, event.Event{Kind: event.DBConnReset, Conn: l.id, Client: l.client.host.Name, Node: l.srv.Name, Reason: s.why})
		if !to.isClient {
			l.sessionEnded("the client's connection was reset")
		}
		return
	case segFin:
		to.mu.Lock()
		to.eof = true
		to.mu.Unlock()
		to.signal()
		who := "server"
		if s.from.isClient {
			who = "client"
		}
		n.w.Record(to.host.Name, event.Event{Kind: event.DBConnClosed, Conn: l.id, Client: l.client.host.Name, Node: l.srv.Name, Reason: who})
		if s.from.isClient {
			l.sessionEnded("the client closed the connection")
		}
		return
	}
	if to.failed() {
		// A segment for a socket that is gone: the receiving host answers
		// with a reset, which travels back.
		if !l.rstSent {
			l.rstSent = true
			_ = l.send(to, segRst, nil, "the peer's socket is gone")
		}
		return
	}
	n.segs++
	n.w.Net.Delivered(s.m)
	if to.failed() {
		return // an observer (a fault trigger) crashed the receiver
	}
	to.mu.Lock()
	to.rbuf = append(to.rbuf, s.data...)
	to.mu.Unlock()
	to.signal()
	if n.w.Tracing() {
		n.w.Record(to.host.Name, event.Event{Kind: event.DBSegmentReceived, Conn: l.id, Client: l.client.host.Name, Node: l.srv.Name, Command: s.m.Summary, Op: s.m.Op, Dir: string(s.m.Dir)})
	}
}

// resetBoth ends the connection on both sides at once (a lost segment).
func (l *link) resetBoth(why string) {
	for _, e := range []*end{l.client, l.server} {
		if !e.failed() {
			e.fail(errReset)
			l.n.w.Record(e.host.Name, event.Event{Kind: event.DBConnReset, Conn: l.id, Client: l.client.host.Name, Node: l.srv.Name, Reason: why})
		}
	}
	l.sessionEnded("connection reset")
}

// serverGone ends the server's side (crash, keepalive) and sends the
// reset to the client, which gets it when the link lets it through.
func (l *link) serverGone(why string) {
	if l.server.failed() {
		return
	}
	err := errCrashed
	if why != "server crashed" {
		err = errKeepalive
	}
	l.server.fail(err)
	l.sessionEnded(why)
	if !l.client.failed() && !l.rstSent {
		l.rstSent = true
		_ = l.send(l.server, segRst, nil, why)
	}
}

// clientGone ends the client's side of a connection whose process
// crashed while its host lives on (a pooler): the host resets it.
func (l *link) clientGone(why string) {
	if l.client.failed() {
		return
	}
	l.client.fail(errCrashed)
	_ = l.send(l.client, segRst, nil, why)
}

// sessionEnded records, once, that the server's backend for this
// connection is gone and its session locks with it.
func (l *link) sessionEnded(why string) {
	if l.sessionUp {
		return
	}
	l.sessionUp = true // "ended" recorded
	l.n.w.Record(l.srv.Name, event.Event{Kind: event.DBSessionEnded, Conn: l.id, Client: l.client.host.Name, Node: l.srv.Name, Reason: why})
}

// armKeepalive starts the server's keepalive timer for the connection.
func (l *link) armKeepalive() {
	ka := l.srv.Keepalive
	if ka.Idle <= 0 {
		return
	}
	l.schedule(l.lastHeard+ka.Idle, 0)
}

func (l *link) schedule(at time.Duration, k int) {
	l.n.w.AtKey(at, fmt.Sprintf("db %s keepalive %d@%d", l.id, k, at), func() { l.keepalive(k + 1) })
}

// keepalive is one keepalive check (kernel held), as Linux runs it
// (tcp_keepalive_timer): after Idle of silence it sends a probe, and
// every Interval after that another while none is answered; the client's
// TCP stack answers unless its host crashed or the link is cut. When
// Count probes are out unanswered at a check, the connection is dead:
// Idle + Count×Interval after the last segment.
func (l *link) keepalive(k int) {
	n := l.n
	ka := l.srv.Keepalive
	if n.ended || l.server.failed() {
		return
	}
	now := n.w.Now()
	if l.probes == 0 && now < l.lastHeard+ka.Idle {
		l.schedule(l.lastHeard+ka.Idle, k)
		return
	}
	if !l.client.host.Crashed() && n.reachable(l.client.host, l.server.host) && !l.server.host.Paused() {
		l.probes, l.lastHeard = 0, now
		l.schedule(now+ka.Idle, k)
		return
	}
	if l.probes > 0 {
		n.w.Record(l.srv.Name, event.Event{Kind: event.DBKeepaliveFailed, Conn: l.id, Client: l.client.host.Name, Node: l.srv.Name, Count: l.probes, Total: ka.Count})
	}
	if l.probes >= ka.Count {
		l.serverGone(fmt.Sprintf("keepalive: %d probes unanswered", l.probes))
		return
	}
	l.probes++
	l.schedule(now+ka.Interval, k)
}
