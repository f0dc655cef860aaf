package sim

import (
	"errors"
	"fmt"
	"github.com/locklab/locklab/sim/event"
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
	// Stream names, in a bubble, the connection a message carried by a
	// service outside this package travels on (see Judge).
	Stream string
	// Size is the bytes the message carries, where the service that sends
	// it knows them (a ZooKeeper frame); the work budget counts them
	// (budget.go): a reply listing a thousand children costs more than
	// one that says OK.
	Size int
	// Facts are what the message says, as data, where its sender decoded
	// them (a ZooKeeper frame's path, result, session): the events about
	// the message carry them, so readers never take them back out of
	// Summary, which is written for people. Nil for most messages.
	Facts *MessageFacts
	order string // in a bubble: the connection it travels on (bubble_message.go)
}

// MessageFacts are the typed contents of a message (Message.Facts), copied
// into the Key, Reply, Session and Ephemeral fields of its events.
type MessageFacts struct {
	// Key is the path or key the message is about.
	Key string
	// Reply is a reply's result ("ok", an error name) or a notification's
	// event type.
	Reply string
	// Session is the session a handshake asks for or was given.
	Session string
	// Ephemeral marks a create of an ephemeral node, or its reply.
	Ephemeral bool
	// Args is the command the message carries (a replicated effect).
	Args []string
}

// event is an event of kind k about m (its ends, op, summary and facts),
// with why it happened and the delay it was given.
func (m *Message) event(k event.Kind, reason string, delay time.Duration) event.Event {
	ev := event.Event{Kind: k, Dir: string(m.Dir), From: m.From, To: m.To, Op: m.Op, Command: m.Summary, Client: m.Client, Reason: reason, Delay: delay}
	if f := m.Facts; f != nil {
		ev.Key, ev.Reply, ev.Session, ev.Ephemeral, ev.Args = f.Key, f.Reply, f.Session, f.Ephemeral, f.Args
	}
	return ev
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
	slab []Message // newMessage's current slab

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
	talked    map[[2]string]bool // pairs that ever sent a message (Talked)
	down      map[string]bool
	filters   []Filter
	observers []Observer
	cutHooks  []func(from, to string, cut bool)
	Sent      int
	Dropped   int
	// Bytes is the sum of the Size of the messages sent.
	Bytes int64

	// inFlight counts messages sent and not yet delivered or lost (and
	// writes queued for shipping to a replica); before counts those among
	// them whose ID is at most watermark, once the world has set one (see
	// World.Run: a run never ends with such a message in flight).
	inFlight  int
	watermark uint64
	before    int
}

func newNetwork(w *World) *Network {
	return &Network{
		Latency: 500 * time.Microsecond,
		Jitter:  500 * time.Microsecond,
		w:       w,
		last:    map[fifoKey]time.Duration{},
		calls:   map[callKey]uint64{},
		cut:     map[[2]string]bool{},
		talked:  map[[2]string]bool{},
		down:    map[string]bool{},
	}
}

// Delayed is one message a fault held back.
type Delayed struct {
	From, To time.Duration // sent, arrives
	Client   string
	// Ends are the message's sender and receiver: the checker excuses a
	// waiter's wait only for a delay on its way to or from the lock.
	Ends    [2]string
	Summary string // "reply n1→c1 SET lock … (fault: …)"
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
func (n *Network) Cut(from, to string) {
	if n.cut[[2]string{from, to}] {
		return
	}
	n.cut[[2]string{from, to}] = true
	n.cutChanged(from, to, true)
}

// Heal removes a one-way cut.
func (n *Network) Heal(from, to string) {
	if !n.cut[[2]string{from, to}] {
		return
	}
	delete(n.cut, [2]string{from, to})
	n.cutChanged(from, to, false)
}

// HealAll removes every cut.
func (n *Network) HealAll() { n.healAll() }

// SetDown marks a host as down (crashed) or up: messages to a down host are lost.
func (n *Network) SetDown(host string, down bool) {
	if down {
		n.down[host] = true
	} else {
		delete(n.down, host)
	}
}

// Reachable reports whether a message from one host to another would get
// through now (no partition between them, the receiver up).
func (n *Network) Reachable(from, to string) bool {
	return !n.cut[[2]string{from, to}] && !n.down[to]
}

// Talked reports whether a or b ever sent the other a message (delivered
// or lost): a partition between hosts that never talk cuts nothing.
func (n *Network) Talked(a, b string) bool {
	return n.talked[[2]string{a, b}] || n.talked[[2]string{b, a}]
}

// Down reports whether a host is down.
func (n *Network) Down(host string) bool { return n.down[host] }

// Send transmits m and calls deliver at its arrival, unless a partition, a
// down receiver or a filter loses it.
func (n *Network) Send(m *Message, deliver func()) {
	n.nextID++
	m.ID = n.nextID
	n.Sent++
	n.Bytes += int64(m.Size)
	w := n.w
	// In a bubble, decisions about this message (jitter, random drops)
	// come from its content, not from the order racing goroutines sent
	// in, and its key orders it among the events of its instant.
	key, saved := w.rt.message(m)
	if saved != nil {
		defer w.rt.endMessage(saved)
	}
	if !n.talked[[2]string{m.From, m.To}] {
		n.talked[[2]string{m.From, m.To}] = true
	}
	if n.cut[[2]string{m.From, m.To}] {
		n.Dropped++
		w.Record(m.From, m.event(event.MessageLost, "partition", 0))
		return
	}
	var extra time.Duration
	var why string
	for _, f := range n.filters {
		drop, delay, reason := f(m)
		if drop {
			n.Dropped++
			w.Record(m.From, m.event(event.MessageDropped, reason, 0))
			return
		}
		if delay > 0 {
			w.Record(m.From, m.event(event.MessageDelayed, reason, delay))
			extra += delay
			why = reason
		}
	}
	lat := n.Latency + extra
	if n.Jitter > 0 {
		lat += time.Duration(w.rng.Int64N(int64(n.Jitter)))
	}
	at := w.rt.arrival(m, w.now+lat)
	if extra > 0 {
		n.Delays = append(n.Delays, Delayed{From: w.now, To: at, Client: m.Client, Ends: [2]string{m.From, m.To},
			Summary: fmt.Sprintf("%s %s→%s %s (%s)", m.Dir, m.From, m.To, m.Op, why)})
	}
	id := n.depart()
	e := w.atKey(at, key, nil)
	e.msg, e.msgID, e.deliver = m, id, deliver
}

// newMessage hands out the next Message of a slab allocated 64 at a time
// (as World.newEvent does for events): a slab lives while any of its
// messages is referenced, so nothing is reused, only allocations saved.
func (n *Network) newMessage() *Message {
	if len(n.slab) == 0 {
		n.slab = make([]Message, 64)
	}
	m := &n.slab[0]
	n.slab = n.slab[1:]
	return m
}

// land is a message's arrival, the work of the event Send scheduled
// (kept out of a closure: one per message was a twentieth of a Redlock
// run's allocations, issue 24).
func (n *Network) land(m *Message, id uint64, deliver func()) {
	defer n.arrive(id)
	if n.down[m.To] {
		n.Dropped++
		n.w.Record(m.To, m.event(event.MessageLost, m.To+" is down", 0))
		return
	}
	for _, o := range n.observers {
		o(m)
	}
	deliver()
}

// Later runs fn after d, counting as a message in flight meanwhile: a
// write a master has queued for shipping to a replica is on its way.
func (n *Network) Later(d time.Duration, fn func()) {
	id := n.depart()
	n.w.After(d, func() {
		defer n.arrive(id)
		fn()
	})
}

func (n *Network) depart() uint64 {
	n.nextID++
	n.inFlight++
	return n.nextID
}

func (n *Network) arrive(id uint64) {
	n.inFlight--
	if id <= n.watermark {
		n.before--
	}
}

// InFlight is the number of messages on their way now.
func (n *Network) InFlight() int { return n.inFlight }

// markQuiet sets the watermark: from now on, settled reports whether every
// message in flight at this instant has arrived or been lost. Messages sent
// later (a reply to a process that has ended, a replica's heartbeat) do not
// keep the run going.
func (n *Network) markQuiet() {
	n.watermark = n.nextID
	n.before = n.inFlight
}

func (n *Network) settled() bool { return n.before <= 0 }

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
	if w.Tracing() {
		w.Record(p.Name, event.Event{Kind: event.CommandSent, Node: to, Client: p.Host.Name, Op: op, Command: summary})
	}
	w.Net.Send(req, func() {
		reply, rs := serve()
		if w.Tracing() {
			w.Record(to, event.Event{Kind: event.CommandExecuted, Node: to, Client: p.Host.Name, Op: op, Command: summary, Reply: rs})
		}
		rep := &Message{Conn: conn, From: to, To: p.Host.Name, Client: p.Host.Name, Dir: Reply, Op: op, Summary: rs}
		if sized, ok := reply.(interface{ WireSize() int }); ok {
			rep.Size = sized.WireSize() // a reply that lists children (budget.go)
		}
		w.Net.Send(rep, func() {
			if p.done {
				return
			}
			got, result = true, reply
			w.wakeup(p, id)
		})
	})
	timer := w.wakeAt(w.Later(p.Host.Clock.TrueDuration(w.now, timeout)), p, id)
	p.park()
	timer.Cancel()
	if p.killed {
		return nil, ErrTimeout
	}
	if !got {
		if w.Tracing() {
			w.Record(p.Name, event.Event{Kind: event.ReplyTimeout, Node: to, Client: p.Host.Name, Op: op})
		}
		return nil, ErrTimeout
	}
	return result, nil
}
