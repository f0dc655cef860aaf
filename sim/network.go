package sim

import (
	"errors"
	"fmt"
	"time"
)

// Direction says whether a message is a request or the reply to one.
type Direction string

const (
	Request Direction = "request"
	Reply   Direction = "reply"
)

// Message is one simulated network message. Every message has a client (the
// host on whose behalf it travels) and an Op (the Redis command name, or the
// RPC name such as READ or WRITE), so fault rules can pick exactly the
// message a scenario is about: "the reply to c1's SET".
type Message struct {
	ID uint64
	// Conn is the connection the message travels on (Network.NewConn);
	// messages on one connection arrive in the order they were sent, as
	// TCP delivers them. Zero means the pair of hosts is the connection.
	Conn    uint64
	From    string
	To      string
	Client  string
	Dir     Direction
	Op      string
	Summary string
}

// Filter inspects a message as it is sent. It may drop it or delay it; reason
// goes into the trace. Faults install filters.
type Filter func(m *Message) (drop bool, delay time.Duration, reason string)

// Observer sees a message at the instant it arrives, before the receiver acts
// on it. Faults that fire "right after c1 receives the reply to SETNX" are
// observers.
type Observer func(m *Message)

// Network carries messages between named hosts with latency drawn from the
// world's seed, in FIFO order per direction of each connection (as TCP
// gives: a client that reconnects does not wait behind a reply delayed on
// its old connection), through the filters that faults install.
type Network struct {
	// Latency is the fixed part of one-way latency; Jitter the upper bound of
	// the uniformly drawn part.
	Latency time.Duration
	Jitter  time.Duration

	// Delays lists every message a fault held back, from its sending to
	// its arrival: the liveness check excuses those stretches.
	Delays []Delayed

	w         *World
	nextID    uint64
	nextConn  uint64
	last      map[fifoKey]time.Duration
	calls     map[callKey]uint64
	cut       map[[2]string]bool
	down      map[string]bool
	filters   []Filter
	observers []Observer
	Sent      int
	Dropped   int
}

func newNetwork(w *World) *Network {
	return &Network{
		Latency: 500 * time.Microsecond,
		Jitter:  500 * time.Microsecond,
		w:       w,
		last:    map[fifoKey]time.Duration{},
		calls:   map[callKey]uint64{},
		cut:     map[[2]string]bool{},
		down:    map[string]bool{},
	}
}

// Delayed is one message a fault held back.
type Delayed struct {
	From, To time.Duration // sent, arrives
	Client   string
	Summary  string // "reply n1→c1 SET lock … (fault: …)"
}

// fifoKey is one direction of one connection.
type fifoKey struct {
	conn     uint64
	from, to string
}

// callKey is the connection a process uses to call a service.
type callKey struct {
	p  *Process
	to string
}

// NewConn opens a connection identity: messages sent with it as Conn keep
// their order among themselves only.
func (n *Network) NewConn() uint64 {
	n.nextConn++
	return n.nextConn
}

// AddFilter installs a fault rule consulted for every message sent.
func (n *Network) AddFilter(f Filter) { n.filters = append(n.filters, f) }

// Observe installs an observer called for every message delivered.
func (n *Network) Observe(o Observer) { n.observers = append(n.observers, o) }

// Cut blocks messages from one host to another (a one-way partition); call it
// both ways for a two-way partition.
func (n *Network) Cut(from, to string) { n.cut[[2]string{from, to}] = true }

// Heal removes a one-way cut.
func (n *Network) Heal(from, to string) { delete(n.cut, [2]string{from, to}) }

// HealAll removes every cut.
func (n *Network) HealAll() { clear(n.cut) }

// SetDown marks a host as down (crashed) or up: messages to a down host are lost.
func (n *Network) SetDown(host string, down bool) {
	if down {
		n.down[host] = true
	} else {
		delete(n.down, host)
	}
}

// Down reports whether a host is down.
func (n *Network) Down(host string) bool { return n.down[host] }

// Send transmits m and calls deliver at its arrival, unless a partition, a
// down receiver or a filter loses it.
func (n *Network) Send(m *Message, deliver func()) {
	n.nextID++
	m.ID = n.nextID
	n.Sent++
	w := n.w
	if n.cut[[2]string{m.From, m.To}] {
		n.Dropped++
		w.Tracef(m.From, "lost %s %s→%s %s (partition)", m.Dir, m.From, m.To, m.Summary)
		return
	}
	var extra time.Duration
	var why string
	for _, f := range n.filters {
		drop, delay, reason := f(m)
		if drop {
			n.Dropped++
			w.Tracef(m.From, "dropped %s %s→%s %s (%s)", m.Dir, m.From, m.To, m.Summary, reason)
			return
		}
		if delay > 0 {
			w.Tracef(m.From, "delayed %s %s→%s %s by %v (%s)", m.Dir, m.From, m.To, m.Summary, delay, reason)
			extra += delay
			why = reason
		}
	}
	lat := n.Latency + extra
	if n.Jitter > 0 {
		lat += time.Duration(w.rng.Int64N(int64(n.Jitter)))
	}
	at := w.now + lat
	key := fifoKey{m.Conn, m.From, m.To}
	if prev := n.last[key]; at < prev {
		at = prev // TCP keeps order within a connection
	}
	n.last[key] = at
	if extra > 0 {
		n.Delays = append(n.Delays, Delayed{From: w.now, To: at, Client: m.Client,
			Summary: fmt.Sprintf("%s %s→%s %s (%s)", m.Dir, m.From, m.To, m.Op, why)})
	}
	w.At(at, func() {
		if n.down[m.To] {
			n.Dropped++
			w.Tracef(m.To, "lost %s %s→%s %s (%s is down)", m.Dir, m.From, m.To, m.Summary, m.To)
			return
		}
		for _, o := range n.observers {
			o(m)
		}
		deliver()
	})
}

// ErrTimeout is returned by Call when no reply arrives in time.
var ErrTimeout = errors.New("simulated timeout: no reply")

// Call is a request/response exchange between the process's host and a
// service host. serve runs on the service at the request's arrival and returns
// the reply; the caller blocks until the reply arrives or timeout elapses on
// its own oscillator. The process keeps one connection per service and
// opens a new one after a timeout, as a client does when it gives up on a
// request.
func (p *Process) Call(to, op, summary string, timeout time.Duration, serve func() (reply any, summary string)) (any, error) {
	n := p.w.Net
	key := callKey{p, to}
	conn, ok := n.calls[key]
	if !ok {
		conn = n.NewConn()
		n.calls[key] = conn
	}
	r, err := p.CallOn(conn, to, op, summary, timeout, serve)
	if err != nil {
		delete(n.calls, key)
	}
	return r, err
}

// CallOn is Call on a connection the caller manages (a ZooKeeper session's).
func (p *Process) CallOn(conn uint64, to, op, summary string, timeout time.Duration, serve func() (reply any, summary string)) (any, error) {
	w := p.w
	var (
		got    bool
		result any
	)
	id := p.prepark()
	req := &Message{Conn: conn, From: p.Host.Name, To: to, Client: p.Host.Name, Dir: Request, Op: op, Summary: summary}
	w.Tracef(p.Name, "send %s → %s", summary, to)
	w.Net.Send(req, func() {
		reply, rs := serve()
		w.Tracef(to, "%s → %s", summary, rs)
		rep := &Message{Conn: conn, From: to, To: p.Host.Name, Client: p.Host.Name, Dir: Reply, Op: op, Summary: rs}
		w.Net.Send(rep, func() {
			if p.done {
				return
			}
			got, result = true, reply
			w.wakeup(p, id)
		})
	})
	timer := w.After(p.Host.Clock.TrueDuration(w.now, timeout), func() { w.wakeup(p, id) })
	p.park()
	timer.Cancel()
	if p.killed {
		return nil, ErrTimeout
	}
	if !got {
		w.Tracef(p.Name, "timeout waiting for %s from %s", op, to)
		return nil, ErrTimeout
	}
	return result, nil
}
