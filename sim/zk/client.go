package zk

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/sim"
)

// Options are a client's session settings.
type Options struct {
	// SessionTimeout is the session timeout asked of the server (default 6s).
	SessionTimeout time.Duration
	// LostAfter is how long the client stays SUSPENDED without contact
	// before it reports LOST on its own (Curator's default, and ours: one
	// session timeout).
	LostAfter time.Duration
	// RequestTimeout is how long a request waits for its reply before it
	// fails with ErrConnectionLoss (default: the ZooKeeper client's read
	// timeout, two thirds of the session timeout).
	RequestTimeout time.Duration
}

// DefaultSessionTimeout is the session timeout when Options leave it out.
const DefaultSessionTimeout = 6 * time.Second

func (o Options) withDefaults() Options {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.LostAfter <= 0 {
		o.LostAfter = o.SessionTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = o.readTimeout()
	}
	return o
}

// readTimeout is how long the client goes without hearing from the server
// before it declares the connection lost (SUSPENDED): 2/3 of the session
// timeout, as the ZooKeeper client computes it.
func (o Options) readTimeout() time.Duration { return o.SessionTimeout * 2 / 3 }

// pingInterval is how long the client stays silent before it pings: half
// the read timeout, so one lost ping does not suspend the connection.
func (o Options) pingInterval() time.Duration { return o.readTimeout() / 2 }

// slack absorbs the nanosecond rounding of oscillator conversions: a
// deadline that close is due.
const slack = time.Microsecond

// Conn is one client's connection to the ensemble, the simulated
// counterpart of a go-zookeeper *zk.Conn wrapped in Curator's connection
// state handling. Its request methods are called from a simulated process
// on the client's host and block that process until the reply (or the
// request timeout); they may be called by several processes of the host.
//
// Two background processes run beside the client's own: "<host>/zk" sends
// pings, watches the time since the last contact and (re)connects;
// "<host>/zk-events" calls the state listeners in order. Both live on the
// client's host, so a pause of the host stops them too.
type Conn struct {
	Host *sim.Host

	opt    Options
	server *Server
	w      *sim.World

	wire        uint64 // the network connection of the current session (sim.Network.NewConn)
	state       State
	session     int64
	lastZxid    int64         // last zxid seen in a reply to a request
	lastHeard   time.Duration // oscillator reading at the last reply
	lastSend    time.Duration // oscillator reading at the last request sent
	suspendedAt time.Duration
	resend      bool // watches must be re-registered (SETWATCHES)
	closed      bool

	watches   []*Watch
	listeners []func(State)
	events    []State
	known     map[string]bool // paths this client learned it created

	ready   sim.Waiter // a session exists (or the conn closed)
	kick    sim.Waiter // the heartbeat should look again
	pending sim.Waiter // a state change waits for the listeners
}

// Connect makes a client on host h: it starts the heartbeat and event
// processes, which establish the session at once. Requests made before the
// session exists wait for it (up to the request timeout).
func (s *Server) Connect(h *sim.Host, opt Options) *Conn {
	c := &Conn{Host: h, opt: opt.withDefaults(), server: s, w: s.w, known: map[string]bool{}}
	s.conns = append(s.conns, c)
	// The processes start from an event, not here: a client connected
	// while a scenario is being built gets them after its own workload
	// process, which stays the host's first (Host.Main).
	s.w.At(s.w.Now(), func() {
		if h.Crashed() {
			return
		}
		h.Spawn(h.Name+"/zk", s.w.Now(), c.heartbeat).Background()
		h.Spawn(h.Name+"/zk-events", s.w.Now(), c.eventLoop).Background()
	})
	return c
}

// Options returns the client's settings after defaults.
func (c *Conn) Options() Options { return c.opt }

// State is the connection state now.
func (c *Conn) State() State { return c.state }

// SessionID is the current session's id, 0 if there is none.
func (c *Conn) SessionID() int64 { return c.session }

// AddListener registers fn to be called with every state change, in order,
// from the client's event process (Curator's ConnectionStateListener).
func (c *Conn) AddListener(fn func(State)) { c.listeners = append(c.listeners, fn) }

// osc is the host's oscillator reading now.
func (c *Conn) osc() time.Duration { return oscillator(c.Host.Clock, c.w.Now()) }

// proc is the calling process, which must run on the client's host.
func (c *Conn) proc() *sim.Process {
	p := c.w.Current()
	if p == nil || p.Host != c.Host {
		panic(fmt.Sprintf("zk: %s's connection used outside a process of host %s", c.Host.Name, c.Host.Name))
	}
	return p
}

func (c *Conn) tracef(format string, args ...any) {
	c.w.Tracef(c.Host.Name, "zk "+format, args...)
}

// setState records a state change and queues it for the listeners.
func (c *Conn) setState(s State) {
	if c.state == s {
		return
	}
	c.state = s
	c.tracef("state %s", s)
	c.events = append(c.events, s)
	c.pending.Signal()
}

// eventLoop is the client's event thread: it calls the listeners with each
// state change, in order.
func (c *Conn) eventLoop(p *sim.Process) {
	for {
		for len(c.events) == 0 {
			c.pending.Wait(p, sim.NoTimeout)
		}
		s := c.events[0]
		c.events = c.events[1:]
		for _, fn := range c.listeners {
			fn(s)
		}
	}
}

// heartbeat is the client's connection process: it makes the session,
// pings when the client has been silent for the ping interval, and moves the
// state along: SUSPENDED after the read timeout without contact, LOST after
// LostAfter in SUSPENDED, then a new session.
func (c *Conn) heartbeat(p *sim.Process) {
	for !c.closed {
		if c.session == 0 {
			c.connect(p)
			continue
		}
		now := c.osc()
		if c.state == Suspended && now-c.suspendedAt >= c.opt.LostAfter-slack {
			c.lose(c.session, fmt.Sprintf("no contact for %v while SUSPENDED", c.opt.LostAfter))
			continue
		}
		if c.state.IsConnected() && now-c.lastHeard >= c.opt.readTimeout()-slack {
			// The ZooKeeper client drops the connection and tries to make
			// a new one at once: ping now.
			c.suspendedAt = now
			c.lastSend = now - c.opt.pingInterval()
			c.setState(Suspended)
			continue
		}
		if c.resend {
			c.setWatches(p)
			continue
		}
		if now-c.lastSend >= c.opt.pingInterval()-slack {
			c.ping(p)
			continue
		}
		wait := c.lastSend + c.opt.pingInterval() - now
		if d := c.nextDeadline() - now; d < wait {
			wait = d
		}
		c.kick.Wait(p, max(wait, slack))
	}
}

// nextDeadline is the oscillator reading at which the state changes if
// nothing is heard.
func (c *Conn) nextDeadline() time.Duration {
	if c.state == Suspended {
		return c.suspendedAt + c.opt.LostAfter
	}
	return c.lastHeard + c.opt.readTimeout()
}

// connect asks for a new session. The first one makes the state CONNECTED,
// any later one (after LOST) RECONNECTED, as Curator reports it.
func (c *Conn) connect(p *sim.Process) {
	srv := c.server
	timeout := c.opt.SessionTimeout
	c.lastSend = c.osc()
	c.wire = c.w.Net.NewConn() // every connect attempt is a new TCP connection
	r, err := p.CallOn(c.wire, srv.Host.Name, "CONNECT", fmt.Sprintf("CONNECT timeout=%v", timeout), timeout, func() (any, string) {
		return srv.connect(c, timeout)
	})
	if c.closed {
		return
	}
	if err != nil {
		return // try again at once: the wait was the connect timeout
	}
	res := r.(reply).val.(connectResult)
	c.session = res.id
	c.lastHeard = c.osc()
	c.resend = false
	if c.state == Connecting {
		c.setState(Connected)
	} else {
		c.setState(Reconnected)
	}
	c.ready.Broadcast()
}

// ping keeps the session alive, or, while SUSPENDED, tries to reach the
// server again (once per ping interval). It waits for its reply no longer
// than the ping interval, nor past the next state deadline. Its reply does
// not move lastZxid (as in ZooKeeper), so a later SetWatches still covers
// what was missed.
func (c *Conn) ping(p *sim.Process) {
	timeout := min(c.opt.pingInterval(), max(c.nextDeadline()-c.osc(), slack))
	c.send(p, "PING", "PING", timeout, false, func(*session) (any, error) { return nil, nil })
}

// setWatches re-registers the outstanding watches after a reconnection.
func (c *Conn) setWatches(p *sim.Process) {
	c.resend = false
	var data, exist, child []string
	for _, wt := range c.watches {
		switch wt.kind {
		case dataWatch:
			data = appendOnce(data, wt.Path)
		case existWatch:
			exist = appendOnce(exist, wt.Path)
		case childWatch:
			child = appendOnce(child, wt.Path)
		}
	}
	if len(data)+len(exist)+len(child) == 0 {
		return
	}
	rel := c.lastZxid
	srv := c.server
	summary := fmt.Sprintf("SETWATCHES zxid=%d data=%v exist=%v child=%v", rel, data, exist, child)
	timeout := min(c.opt.RequestTimeout, max(c.nextDeadline()-c.osc(), slack))
	_, err := c.send(p, "SETWATCHES", summary, timeout, false, func(ss *session) (any, error) {
		srv.setWatches(ss, rel, data, exist, child)
		return nil, nil
	})
	if err == ErrConnectionLoss {
		c.resend = true
	}
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// heard records contact with the server on session sid. Contact while
// SUSPENDED means the connection is back: RECONNECTED, and the watches are
// re-registered.
func (c *Conn) heard(sid int64) {
	if sid != c.session || c.closed {
		return
	}
	c.lastHeard = c.osc()
	if c.state == Suspended {
		c.setState(Reconnected)
		c.resend = true
		c.kick.Broadcast()
	}
}

// lose ends session sid on the client's side: LOST, every outstanding watch
// ends with ErrSessionExpired, and the heartbeat makes a new session.
func (c *Conn) lose(sid int64, why string) {
	if sid != c.session || sid == 0 {
		return
	}
	c.tracef("session %s lost: %s", sessionName(sid), why)
	c.session = 0
	c.resend = false
	c.setState(Lost)
	c.invalidateWatches(ErrSessionExpired)
	c.kick.Broadcast()
}

// Close ends the session (its ephemeral nodes go at once) and stops the
// client.
func (c *Conn) Close() {
	if c.closed {
		return
	}
	p := c.proc()
	if c.session != 0 {
		srv := c.server
		c.send(p, "CLOSE", "CLOSE", c.opt.RequestTimeout, false, func(ss *session) (any, error) {
			srv.closeSession(ss)
			return nil, nil
		})
	}
	c.closed = true
	c.session = 0
	c.setState(Closed)
	c.invalidateWatches(ErrClosing)
	c.ready.Broadcast()
	c.kick.Broadcast()
}

// awaitSession blocks until a session exists, up to the request timeout.
func (c *Conn) awaitSession(p *sim.Process) error {
	if c.closed {
		return ErrClosing
	}
	if c.session != 0 {
		return nil
	}
	deadline := c.osc() + c.opt.RequestTimeout
	for c.session == 0 && !c.closed {
		left := deadline - c.osc()
		if left <= slack || !c.ready.Wait(p, left) {
			if c.session == 0 && !c.closed {
				return ErrConnectionLoss
			}
		}
	}
	if c.closed {
		return ErrClosing
	}
	return nil
}

// send performs one request of the current session and waits up to
// timeout for its reply. Any reply is contact; a reply saying the session
// expired makes the client LOST.
func (c *Conn) send(p *sim.Process, op, summary string, timeout time.Duration, data bool, fn func(ss *session) (any, error)) (any, error) {
	sid := c.session
	srv := c.server
	c.lastSend = c.osc()
	r, err := p.CallOn(c.wire, srv.Host.Name, op, summary, timeout, func() (any, string) { return srv.serve(sid, fn) })
	if err != nil {
		return nil, ErrConnectionLoss
	}
	rep := r.(reply)
	if rep.err == ErrSessionExpired {
		c.lose(sid, "the server says it expired")
		return nil, ErrSessionExpired
	}
	c.heard(sid)
	if data && sid == c.session && rep.zxid > c.lastZxid {
		c.lastZxid = rep.zxid
	}
	return rep.val, rep.err
}

// request runs one client request: it waits for a session, then sends.
func (c *Conn) request(op, summary string, fn func(ss *session) (any, error)) (any, error) {
	p := c.proc()
	if err := c.awaitSession(p); err != nil {
		return nil, err
	}
	return c.send(p, op, summary, c.opt.RequestTimeout, true, fn)
}

func flagName(flags int32) string {
	switch flags {
	case 0:
		return "persistent"
	case FlagEphemeral:
		return "ephemeral"
	case FlagSequence:
		return "sequential"
	case FlagEphemeral | FlagSequence:
		return "ephemeral-sequential"
	}
	return fmt.Sprintf("flags=%d", flags)
}

// Create makes a znode and returns its path (with the sequence suffix if
// FlagSequence is set).
func (c *Conn) Create(path string, data []byte, flags int32) (string, error) {
	p, _, err := c.Create2(path, data, flags)
	return p, err
}

// Create2 is Create that also returns the new node's Stat (ZooKeeper's
// create2), whose Czxid can serve as a fencing token.
func (c *Conn) Create2(path string, data []byte, flags int32) (string, *Stat, error) {
	srv := c.server
	r, err := c.request("CREATE", fmt.Sprintf("CREATE %s %s", path, flagName(flags)), func(ss *session) (any, error) {
		return srv.create(ss, path, data, flags)
	})
	if err != nil {
		return "", nil, err
	}
	res := r.(createResult)
	c.known[res.path] = true
	st := res.stat
	return res.path, &st, nil
}

// Delete removes a znode if its version matches (-1: any version).
func (c *Conn) Delete(path string, version int32) error {
	srv := c.server
	_, err := c.request("DELETE", fmt.Sprintf("DELETE %s version=%d", path, version), func(*session) (any, error) {
		return nil, srv.delete(path, version)
	})
	if err == nil {
		c.known[path] = true
	}
	return err
}

// Exists reports whether a znode exists, with its Stat.
func (c *Conn) Exists(path string) (bool, *Stat, error) {
	ok, st, _, err := c.exists(path, false)
	return ok, st, err
}

// ExistsW is Exists that also leaves a one-shot watch, which fires when
// the node is created (if it did not exist), changed or deleted.
func (c *Conn) ExistsW(path string) (bool, *Stat, *Watch, error) {
	return c.exists(path, true)
}

func (c *Conn) exists(path string, watch bool) (bool, *Stat, *Watch, error) {
	srv := c.server
	sid := c.session
	r, err := c.request("EXISTS", fmt.Sprintf("EXISTS %s%s", path, watchNote(watch)), func(ss *session) (any, error) {
		sid = ss.id
		return srv.exists(ss, path, watch), nil
	})
	if err != nil {
		return false, nil, nil, err
	}
	st := r.(existsResult).stat
	if st != nil && st.EphemeralOwner == sid {
		c.known[path] = true
	}
	var wt *Watch
	if watch {
		kind := dataWatch
		if st == nil {
			kind = existWatch
		}
		wt = c.addWatch(sid, path, kind)
	}
	return st != nil, st, wt, nil
}

// Get returns a znode's data and Stat.
func (c *Conn) Get(path string) ([]byte, *Stat, error) {
	d, st, _, err := c.get(path, false)
	return d, st, err
}

// GetW is Get that also leaves a one-shot watch (only if the node exists:
// on ErrNoNode no watch is left), which fires when the node changes or is
// deleted. Curator's lock watches its predecessor this way.
func (c *Conn) GetW(path string) ([]byte, *Stat, *Watch, error) {
	return c.get(path, true)
}

func (c *Conn) get(path string, watch bool) ([]byte, *Stat, *Watch, error) {
	srv := c.server
	sid := c.session
	r, err := c.request("GETDATA", fmt.Sprintf("GETDATA %s%s", path, watchNote(watch)), func(ss *session) (any, error) {
		sid = ss.id
		return srv.getData(ss, path, watch)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	res := r.(getResult)
	st := res.stat
	if st.EphemeralOwner == sid {
		c.known[path] = true
	}
	var wt *Watch
	if watch {
		wt = c.addWatch(sid, path, dataWatch)
	}
	return res.data, &st, wt, nil
}

// Set replaces a znode's data if its version matches (-1: any version).
func (c *Conn) Set(path string, data []byte, version int32) (*Stat, error) {
	srv := c.server
	r, err := c.request("SETDATA", fmt.Sprintf("SETDATA %s version=%d", path, version), func(*session) (any, error) {
		return srv.setData(path, data, version)
	})
	if err != nil {
		return nil, err
	}
	st := r.(Stat)
	return &st, nil
}

// Children lists a znode's children (names, not paths), sorted.
func (c *Conn) Children(path string) ([]string, *Stat, error) {
	ch, st, _, err := c.children(path, false)
	return ch, st, err
}

// ChildrenW is Children that also leaves a one-shot watch, which fires when
// a child is created or deleted, or the node itself is deleted.
func (c *Conn) ChildrenW(path string) ([]string, *Stat, *Watch, error) {
	return c.children(path, true)
}

func (c *Conn) children(path string, watch bool) ([]string, *Stat, *Watch, error) {
	srv := c.server
	sid := c.session
	r, err := c.request("CHILDREN", fmt.Sprintf("CHILDREN %s%s", path, watchNote(watch)), func(ss *session) (any, error) {
		sid = ss.id
		return srv.getChildren(ss, path, watch)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	res := r.(childrenResult)
	st := res.stat
	var wt *Watch
	if watch {
		wt = c.addWatch(sid, path, childWatch)
	}
	return res.children, &st, wt, nil
}

func watchNote(watch bool) string {
	if watch {
		return " watch"
	}
	return ""
}

type watchKind int

const (
	dataWatch  watchKind = iota + 1 // Get, or Exists on an existing node
	existWatch                      // Exists on a missing node
	childWatch                      // Children
)

// Watch is a one-shot watch: go-zookeeper's <-chan Event, made for a
// simulated process. It fires once, with the event or, when the session
// ends first, with EventNotWatching.
type Watch struct {
	Path string

	kind  watchKind
	conn  *Conn
	fired bool
	ev    Event
	cond  sim.Waiter
}

// addWatch records a watch the server registered for session sid. If the
// session is already gone, the watch is born ended.
func (c *Conn) addWatch(sid int64, path string, kind watchKind) *Watch {
	wt := &Watch{Path: path, kind: kind, conn: c}
	if sid != c.session || c.closed {
		wt.fire(Event{Type: EventNotWatching, Path: path, Err: ErrSessionExpired})
		return wt
	}
	c.watches = append(c.watches, wt)
	return wt
}

func (wt *Watch) fire(ev Event) {
	if wt.fired {
		return
	}
	wt.fired, wt.ev = true, ev
	wt.cond.Broadcast()
}

// Wait blocks the calling process until the watch fires (ok is true) or
// timeout passes on the host's oscillator (ok is false). NoTimeout waits
// as long as it takes.
func (wt *Watch) Wait(timeout time.Duration) (ev Event, ok bool) {
	p := wt.conn.proc()
	for !wt.fired {
		if !wt.cond.Wait(p, timeout) && !wt.fired {
			return Event{}, false
		}
	}
	return wt.ev, true
}

// Fired returns the event if the watch has fired, without waiting.
func (wt *Watch) Fired() (Event, bool) { return wt.ev, wt.fired }

// matches says which watches an event ends, as go-zookeeper dispatches.
func (k watchKind) matches(t EventType) bool {
	switch t {
	case EventNodeCreated:
		return k == existWatch
	case EventNodeDataChanged:
		return k == existWatch || k == dataWatch
	case EventNodeChildrenChanged:
		return k == childWatch
	case EventNodeDeleted:
		return true
	}
	return false
}

// deliver handles a notification arriving from the server: every
// outstanding watch of the client on that path that the event concerns
// fires, in the order they were set. It runs at the arrival instant, even
// on a paused host; the processes waiting on the watches wake only when the
// host runs. (A notification does not count as contact here: the
// connection state moves only in the client's processes.)
func (c *Conn) deliver(sid int64, ev Event) {
	if sid != c.session || c.closed {
		return
	}
	kept := c.watches[:0:0]
	for _, wt := range c.watches {
		if wt.Path == ev.Path && wt.kind.matches(ev.Type) {
			wt.fire(ev)
		} else {
			kept = append(kept, wt)
		}
	}
	c.watches = kept
}

func (c *Conn) invalidateWatches(err error) {
	all := c.watches
	c.watches = nil
	for _, wt := range all {
		wt.fire(Event{Type: EventNotWatching, Path: wt.Path, Err: err})
	}
}
