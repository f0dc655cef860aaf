package ensemble

// World mode: the ensemble driven by a sim.World's kernel in bubble mode,
// so that a scenario's faults, workload, recorder and checker act on it.
//
//   - Time and events: the world's true time is the ensemble's clock
//     (mapped onto the bubble's time.Time by World.BubbleTime), and every
//     ensemble event is a world event (World.AtKey), keyed by kind, client
//     host, connection and message number, so same-instant events order by
//     content.
//   - Lock order: the kernel's events take e.mu inside the kernel. A client
//     goroutine (go-zookeeper's send loop writing, its dial, a close)
//     enters the kernel first through World.Notify and only then takes
//     e.mu. Conn.Read takes e.mu alone, never the kernel, and blocks on a
//     channel of the bubble. Nothing ever takes e.mu and then the kernel.
//   - Faults come from the world: its network's cuts are the ensemble's
//     partitions (Network.OnCutChange), host pauses and crashes hold or
//     reset the host's connections (World.OnHostChange), its filters judge
//     each frame (Network.Judge: a drop resets the connection, as a lost
//     segment ends a TCP connection; a delay delays it, in order), its
//     observers see each frame delivered (Network.Delivered).
//   - The end of the run (World.OnRunEnd) shuts the ensemble down: every
//     connection is reset and later dials and writes fail without the
//     kernel, so go-zookeeper's goroutines return.

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	record "github.com/locklab/locklab/sim/event"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/zk/wire"
)

// NewOnWorld builds an ensemble whose time and events are w's: servers
// zk1…zkN become hosts of w (Hosts), zkN leads first, as with New. w must
// be in bubble mode (w.UseBubble()) and NewOnWorld must be called inside
// the synctest bubble, before w.Run. Clients connect with Connect, the
// host being a world host's name; they must only be used from goroutines
// of the bubble (a process's Outside, or the client's own goroutines).
// Methods that change the ensemble (Crash, Restart, Partition, Heal,
// Pause, Resume, Drop, Delay, LoseNext, CrashLeaderOn) must be called
// with the kernel held: from a w.At event or a process.
func NewOnWorld(w *sim.World, cfg Config) *Ensemble {
	if !w.Bubble() {
		panic("ensemble.NewOnWorld: the world must run in a synctest bubble (call w.UseBubble first)")
	}
	e := newEnsemble(cfg, w.BubbleTime(0))
	e.w = w
	e.drv = worldDriver{e: e, w: w}
	e.observed = map[*sim.Message]bool{}
	for _, s := range e.servers {
		e.hosts = append(e.hosts, w.NewHost(s.name, nil))
	}
	w.Net.OnCutChange(e.cutChanged)
	w.OnHostChange(e.hostChanged)
	w.OnRunEnd(e.Shutdown)
	// The starting roles are no event of the run (newEnsemble hands epoch 1
	// to the highest id, every server serving); the trace still says who
	// leads, so that a reader, and the reports' server lanes, know it from
	// the first line.
	e.record(e.servers[e.leader].name, record.Event{Kind: record.LeaderAtStart, Node: e.servers[e.leader].name, Epoch: e.epoch, Count: len(e.servers), Total: len(e.servers)})
	return e
}

// Hosts are the servers' hosts in world mode (nil standalone), in server
// order: zk1, zk2, …
func (e *Ensemble) Hosts() []*sim.Host { return append([]*sim.Host(nil), e.hosts...) }

// worldDriver runs the ensemble's events as the world's.
type worldDriver struct {
	e *Ensemble
	w *sim.World
}

func (d worldDriver) now() time.Time { return d.w.BubbleTime(d.w.Now()) }

func (d worldDriver) at(t time.Time, kind int, host string, key int64, fn func()) {
	k := ""
	if kind != kindInternal {
		// Internal events are only scheduled from kernel events, in a
		// deterministic order; frames are named by their content.
		k = fmt.Sprintf("zk%d %s %016x", kind, host, uint64(key))
	}
	e := d.e
	d.w.AtKey(t.Sub(e.start), k, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.stopping {
			return
		}
		e.stats.Events++
		fn()
	})
}

// tracing reports whether events go to a world's record (world mode with
// tracing on): fields that cost a Sprintf are built only then.
func (e *Ensemble) tracing() bool { return e.w != nil && e.w.Tracing() }

// record adds an event to the world's record (world mode only; e.mu and
// the kernel held).
func (e *Ensemble) record(actor string, ev record.Event) {
	if e.tracing() {
		e.w.Record(actor, ev)
	}
}

// connEvent is an event about connection c: its client host, its server
// and its name.
func (c *Conn) connEvent(k record.Kind) record.Event {
	return record.Event{Kind: k, Client: c.host, Node: c.server.name, Conn: c.stream()}
}

// stream names a connection: client host, its dial number, server.
func (c *Conn) stream() string { return fmt.Sprintf("%s#%d>%s", c.host, c.id, c.server.name) }

// departUp is a frame leaving its client host (world mode): the world's
// filters judge it; a dropped frame resets the connection when it would
// have arrived (TCP gives up on a segment that never gets through and the
// client sees the connection break; the request never took effect).
func (c *Conn) departUp(msg []byte, fin bool, seq int64) {
	e := c.e
	var m *sim.Message
	var extra time.Duration
	if !fin && !c.closedByReset() {
		m = c.upMessage(msg)
		drop, delay, why := e.w.Net.Judge(m)
		if drop {
			at := c.arrival(&c.lastUp, 0)
			summary := m.Summary
			e.at(at, kindUp, c.host, int64(c.id)<<32|seq, func() {
				c.reset(fmt.Sprintf("request %s lost (%s)", summary, why))
			})
			return
		}
		extra = delay
	}
	at := c.arrival(&c.lastUp, extra)
	e.at(at, kindUp, c.host, int64(c.id)<<32|seq, func() { c.deliverUp(msg, fin, m) })
}

func (c *Conn) closedByReset() bool { return c.rdErr == errReset }

// judgeDown shows a server frame to the world's filters; on a drop the
// connection is reset when the frame would have arrived (the request took
// effect; the client never hears).
func (c *Conn) judgeDown(frame []byte) (*sim.Message, bool, time.Duration) {
	e := c.e
	m := c.downMessage(frame)
	drop, delay, why := e.w.Net.Judge(m)
	if !drop {
		return m, false, delay
	}
	c.downSeq++
	at := c.arrival(&c.lastDown, 0)
	summary := m.Summary
	e.at(at, kindDown, c.host, int64(c.id)<<32|c.downSeq, func() {
		c.reset(fmt.Sprintf("reply %s lost (%s)", summary, why))
	})
	return m, true, 0
}

// resend delivers a frame a partition held, once the link is back (TCP
// retransmission): it was judged when it was first sent.
func (c *Conn) resend(h stalledMsg) {
	e := c.e
	if h.up {
		c.upSeq++
		at := c.arrival(&c.lastUp, 0)
		e.at(at, kindUp, c.host, int64(c.id)<<32|c.upSeq, func() { c.deliverUp(h.msg, h.fin, h.m) })
		return
	}
	c.scheduleDown(h.msg, h.fin, h.m, 0)
}

// observe shows the world's observers a frame that arrives (world mode;
// once per frame, even if a cut then holds it). They run with e.mu
// released, the kernel still held: a fault trigger among them may pause
// or crash a host, cut the network or crash a server, and each of those
// takes e.mu. It reports whether observers ran (the caller then looks at
// the connection again).
func (e *Ensemble) observe(m *sim.Message) bool {
	if e.w == nil || m == nil || e.observed[m] {
		return false
	}
	e.observed[m] = true
	e.mu.Unlock()
	e.w.Net.Delivered(m)
	e.mu.Lock()
	return true
}

// delivered traces a frame's arrival.
func (e *Ensemble) delivered(c *Conn, m *sim.Message, fin, up bool) {
	if e.w == nil {
		return
	}
	if fin {
		if !e.tracing() {
			return
		}
		ev := c.connEvent(record.ConnClosedBy)
		if up {
			ev.Reason = "client"
			e.record(c.server.name, ev)
		} else {
			ev.Reason = "server"
			e.record(c.host, ev)
		}
		return
	}
	if m == nil {
		return
	}
	delete(e.observed, m)
	if !e.tracing() {
		return
	}
	ev := c.frameEvent(record.FrameReceived, m)
	if up {
		e.record(c.server.name, ev)
	} else {
		e.record(c.host, ev)
	}
}

// frameEvent is an event of kind k about the frame m on c, with what the
// frame says as data.
func (c *Conn) frameEvent(k record.Kind, m *sim.Message) record.Event {
	ev := c.connEvent(k)
	ev.Command, ev.Op, ev.Dir = m.Summary, m.Op, string(m.Dir)
	if f := m.Facts; f != nil {
		ev.Key, ev.Reply, ev.Session, ev.Ephemeral = f.Key, f.Reply, f.Session, f.Ephemeral
	}
	return ev
}

// remember gives m what the frame says as data (sim.MessageFacts: the
// path, the result, the session, whether the node is ephemeral), so the
// events about it carry them and readers (the reports' ZooKeeper lanes)
// never take them back out of the summary written for people.
// Built only when events are.
func (c *Conn) remember(m *sim.Message, f sim.MessageFacts) {
	if !c.e.tracing() {
		return
	}
	if f.Key != "" || f.Reply != "" || f.Session != "" || f.Ephemeral {
		m.Facts = &f
	}
}

// upMessage describes a client frame for the world: its op as
// faults.ZooKeeperOps names it, and the path.
func (c *Conn) upMessage(body []byte) *sim.Message {
	m := &sim.Message{From: c.host, To: c.server.name, Client: c.host, Dir: sim.Request, Stream: "zk " + c.stream(), Size: len(body)}
	if !c.sentConnect {
		c.sentConnect = true
		m.Op = "CONNECT"
		if req, err := wire.DecodeConnect(body); err == nil && req.SessionID != 0 {
			m.Summary = fmt.Sprintf("CONNECT session 0x%x", req.SessionID)
			c.remember(m, sim.MessageFacts{Session: fmt.Sprintf("0x%x", req.SessionID)})
		} else {
			m.Summary = "CONNECT new session"
		}
		return m
	}
	if len(body) < 8 {
		m.Op, m.Summary = "?", "short frame"
		return m
	}
	xid, op := int32(binary.BigEndian.Uint32(body)), int32(binary.BigEndian.Uint32(body[4:]))
	m.Op = opName(op)
	m.Summary = m.Op
	req, err := wire.DecodeRequest(body)
	if err == nil && req.Path != "" {
		m.Summary += " " + redactGUID(req.Path)
		c.remember(m, sim.MessageFacts{Key: redactGUID(req.Path), Ephemeral: req.Op == wire.OpCreate && req.Flags&wire.FlagEphemeral != 0})
	}
	if xid != wire.XidPing {
		if c.xids == nil {
			c.xids = map[int32]string{}
		}
		c.xids[xid] = m.Summary
		if err == nil && req.Path != "" && c.e.tracing() {
			if c.xidPaths == nil {
				c.xidPaths = map[int32]string{}
			}
			c.xidPaths[xid] = redactGUID(req.Path)
		}
		// The reply names the created path; whether the node is ephemeral
		// (ZooKeeper's CreateMode, flag bit 1) is only in the request, and
		// reports tell a client's lock node from a persistent parent by it.
		if err == nil && req.Op == wire.OpCreate && req.Flags&wire.FlagEphemeral != 0 {
			if c.ephemeralXids == nil {
				c.ephemeralXids = map[int32]bool{}
			}
			c.ephemeralXids[xid] = true
		}
	}
	return m
}

// downMessage describes a server frame: the reply to a request (same op,
// with the error name), a watch notification (WATCH), a ping reply, or
// the handshake's answer (CONNECT).
func (c *Conn) downMessage(frame []byte) *sim.Message {
	m := &sim.Message{From: c.server.name, To: c.host, Client: c.host, Dir: sim.Reply, Stream: "zk " + c.stream(), Size: len(frame)}
	body := frame
	if len(body) >= 4 {
		body = body[4:]
	}
	if !c.gotConnect {
		c.gotConnect = true
		m.Op = "CONNECT"
		m.Summary = "CONNECT refused (session expired)"
		f := sim.MessageFacts{Reply: "SESSIONEXPIRED"}
		if len(body) >= 16 {
			if id := int64(binary.BigEndian.Uint64(body[8:])); id != 0 {
				m.Summary = fmt.Sprintf("CONNECT → session 0x%x", id)
				f = sim.MessageFacts{Reply: "ok", Session: fmt.Sprintf("0x%x", id)}
			}
		}
		c.remember(m, f)
		return m
	}
	if len(body) < 16 {
		m.Op, m.Summary = "?", "short frame"
		return m
	}
	xid := int32(binary.BigEndian.Uint32(body))
	code := int32(binary.BigEndian.Uint32(body[12:]))
	switch xid {
	case wire.XidNotification:
		m.Op = "WATCH"
		d := wire.NewDecoder(body[16:])
		typ, _, path := d.Int(), d.Int(), d.String()
		m.Summary = fmt.Sprintf("WATCH %s %s", eventName(typ), redactGUID(path))
		c.remember(m, sim.MessageFacts{Key: redactGUID(path), Reply: eventName(typ)})
	case wire.XidPing:
		m.Op, m.Summary = "PING", "PING → ok"
	default:
		req, ok := c.xids[xid]
		ephemeral := c.ephemeralXids[xid]
		path := c.xidPaths[xid]
		delete(c.xids, xid)
		delete(c.ephemeralXids, xid)
		delete(c.xidPaths, xid)
		if !ok {
			req = fmt.Sprintf("xid %d", xid)
		}
		m.Op = req
		for i := 0; i < len(req); i++ {
			if req[i] == ' ' {
				m.Op = req[:i]
				break
			}
		}
		m.Summary = req + " → " + errName(code)
		f := sim.MessageFacts{Key: path, Reply: errName(code)}
		// A create's reply (CreateResponse, or Create2Response whose
		// first field is also the path) names the node the server made:
		// for a sequential node the requested name plus the sequence
		// number, which the request alone cannot tell.
		if code == wire.ErrOK && (m.Op == "CREATE" || m.Op == "CREATE2") {
			if made := wire.NewDecoder(body[16:]).String(); made != "" {
				m.Summary += " " + redactGUID(made)
				f.Key, f.Ephemeral = redactGUID(made), ephemeral
				if ephemeral {
					m.Summary += " (ephemeral)"
				}
			}
		}
		c.remember(m, f)
	}
	return m
}

// redactGUID leaves out the GUID of a protected name (Curator's and
// go-zookeeper's "_c_<32 hex digits>-" prefix). go-zookeeper draws it from
// crypto/rand; even with a seeded global source (cryptotest), clients that
// draw at one instant race for it. The run does not depend on its value
// (children are ordered by sequence number), so the world's trace and the
// content keys of frames leave it out, and one seed keeps one trace.
//
// It runs for every ZooKeeper message, so it scans by hand instead of
// with a regular expression (a tenth of a ZooKeeper run's CPU went to
// regexp); TestRedactGUIDMatchesPattern holds it to the pattern
// _c_[0-9a-f]{32}- replaced, leftmost first, as regexp would.
func redactGUID(path string) string {
	const guidLen = len("_c_") + 32 + len("-")
	if len(path) < guidLen {
		return path
	}
	var out []byte
	done := 0 // path[:done] is in out already
	for i := 0; i+guidLen <= len(path); {
		j := strings.Index(path[i:], "_c_")
		if j < 0 || i+j+guidLen > len(path) {
			break
		}
		i += j
		if isGUID(path[i+3:i+guidLen-1]) && path[i+guidLen-1] == '-' {
			out = append(append(out, path[done:i]...), "_c_…-"...)
			i += guidLen
			done = i
			continue
		}
		i++
	}
	if out == nil {
		return path
	}
	return string(append(out, path[done:]...))
}

// isGUID says whether s is lower-case hex digits only.
func isGUID(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func opName(op int32) string { return wire.OpName(op) }

func errName(code int32) string {
	switch code {
	case wire.ErrOK:
		return "ok"
	case wire.ErrSystemError:
		return "SYSTEMERROR"
	case wire.ErrRuntimeInconsistency:
		return "RUNTIMEINCONSISTENCY"
	case wire.ErrConnectionLoss:
		return "CONNECTIONLOSS"
	case wire.ErrMarshallingError:
		return "MARSHALLINGERROR"
	case wire.ErrUnimplemented:
		return "UNIMPLEMENTED"
	case wire.ErrBadArguments:
		return "BADARGUMENTS"
	case wire.ErrNoNode:
		return "NONODE"
	case wire.ErrBadVersion:
		return "BADVERSION"
	case wire.ErrNoChildrenForEphemerals:
		return "NOCHILDRENFOREPHEMERALS"
	case wire.ErrNodeExists:
		return "NODEEXISTS"
	case wire.ErrNotEmpty:
		return "NOTEMPTY"
	case wire.ErrSessionExpired:
		return "SESSIONEXPIRED"
	case wire.ErrInvalidACL:
		return "INVALIDACL"
	case wire.ErrSessionMoved:
		return "SESSIONMOVED"
	}
	return fmt.Sprintf("error %d", code)
}

func eventName(typ int32) string {
	switch typ {
	case wire.EventNodeCreated:
		return "NodeCreated"
	case wire.EventNodeDeleted:
		return "NodeDeleted"
	case wire.EventNodeDataChanged:
		return "NodeDataChanged"
	case wire.EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	}
	return fmt.Sprintf("event %d", typ)
}

// cutChanged follows the world's network: a link between two names is cut
// for the ensemble while either direction is cut (a TCP connection needs
// both ways), and the ensemble partitions or heals when that changes.
func (e *Ensemble) cutChanged(from, to string, _ bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return
	}
	a, b := from, to
	if a > b {
		a, b = b, a
	}
	now := e.w.Net.IsCut(a, b) || e.w.Net.IsCut(b, a)
	if now == e.cuts[[2]string{a, b}] {
		return
	}
	if now {
		e.record(a, record.Event{Kind: record.LinkCut, From: a, To: b})
		e.partition(a, b)
	} else {
		e.record(a, record.Event{Kind: record.LinkHealed, From: a, To: b})
		e.heal(a, b)
	}
}

// hostChanged follows the world's hosts. A paused host, client or server,
// holds what it sends and what is sent to it until it resumes (its
// kernel's socket buffers keep the bytes); a paused server is, for its
// peers, a server they cannot reach (noticed after syncLimit, as a
// partition is). A crashed client host's connections reset and it dials
// nobody again; a crashed server host is Crash.
func (e *Ensemble) hostChanged(h *sim.Host, ch sim.HostChange) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return
	}
	name := h.Name
	_, isServer := e.byName[name]
	switch ch {
	case sim.HostPaused:
		e.paused[name] = true
		if isServer {
			e.after(time.Duration(e.cfg.SyncLimit)*e.cfg.TickTime, e.checkQuorum)
		}
	case sim.HostResumed:
		e.resume(name)
		if isServer {
			for _, c := range e.conns {
				if c.server.name == name && !e.cut(c.host, name) && len(c.stalled) > 0 {
					c.release()
				}
			}
			e.peersHealed()
		}
	case sim.HostCrashed:
		if isServer {
			e.crash(name)
			return
		}
		e.crashedHosts[name] = true
		for _, c := range e.conns {
			if c.host == name && !c.closed && c.rdErr == nil {
				c.reset("client host crashed")
			}
		}
	}
}
