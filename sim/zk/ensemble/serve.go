package ensemble

import (
	"bytes"
	"sort"
	"time"

	"github.com/locklab/locklab/sim/zk/wire"
)

// The server side of a client connection: the handshake, the per-session
// FIFO, reads from the local tree, writes through the leader, watches.

type pendingReq = wire.Request

// handleFrame is one frame arriving from a client.
func (s *server) handleFrame(c *Conn, body []byte) {
	if !s.up || !s.serving {
		// A LOOKING server does not serve: it closes the connection
		// ("ZooKeeperServer not running").
		c.serverClose()
		return
	}
	if !c.handshook {
		req, err := wire.DecodeConnect(body)
		c.handshook = true
		if err != nil {
			c.serverClose()
			return
		}
		s.connect(c, req)
		return
	}
	req, err := wire.DecodeRequest(body)
	if err != nil {
		// The Java server closes a connection it cannot parse.
		c.serverClose()
		return
	}
	if c.session != nil {
		s.touch(c.session)
	}
	c.fifo = append(c.fifo, req)
	s.pump(c)
}

// connect answers a ConnectRequest: a new session is a transaction
// through the leader; a resumed one is revalidated with the leader.
func (s *server) connect(c *Conn, req wire.ConnectRequest) {
	e := s.e
	if req.LastZxidSeen > s.tree.zxid {
		// "Refusing session request for client as it has seen zxid
		// … our last zxid is …": the client must find a newer server.
		c.serverClose()
		return
	}
	timeout := time.Duration(req.Timeout) * time.Millisecond
	if timeout < e.cfg.MinSessionTimeout {
		timeout = e.cfg.MinSessionTimeout
	}
	if timeout > e.cfg.MaxSessionTimeout {
		timeout = e.cfg.MaxSessionTimeout
	}
	if req.SessionID == 0 {
		e.nextSession++
		id := int64(s.id)<<56 | e.nextSession
		sess := &session{id: id, passwd: password(id), timeout: timeout, conn: c}
		c.busy = true
		s.forward(&proposal{kind: opCreateSession, origin: c, sess: id, apply: func(t *txn) {
			sess.lastTouch = e.now()
			e.sessions[id] = sess
			e.startTicking()
			t.connect = &connectReply{resp: wire.ConnectResponse{Timeout: int32(timeout / time.Millisecond), SessionID: id, Passwd: sess.passwd}}
		}})
		c.session = sess
		return
	}
	check := func() {
		if c.srvGone || !s.serving {
			return
		}
		sess := e.sessions[req.SessionID]
		if sess == nil || sess.closing || !bytes.Equal(sess.passwd, req.Passwd) {
			c.sendDown(wire.ConnectResponse{Passwd: make([]byte, 16)}.Frame(), false)
			c.serverClose()
			return
		}
		if old := sess.conn; old != nil && old != c && !old.srvGone {
			// The session moved: its old connection is closed.
			old.serverClose()
		}
		sess.conn = c
		c.session = sess
		s.touch(sess)
		c.sendDown(wire.ConnectResponse{Timeout: int32(sess.timeout / time.Millisecond), SessionID: sess.id, Passwd: sess.passwd}.Frame(), false)
		s.pump(c)
	}
	c.busy = true
	done := func() { c.busy = false; check() }
	if s.id-1 == e.leader {
		done()
		return
	}
	// A follower asks the leader (Learner.validateSession: a REVALIDATE
	// packet, one round trip) and answers the client only with the
	// leader's reply, which also touches the session. Cut off from the
	// leader, the packet waits in the follower's connection to it, and the
	// client's handshake waits with it: until the link heals, or until the
	// follower gives up on its leader and drops its clients. A follower
	// that answered on its own would hand a client a session the leader is
	// about to expire, and the lock with it.
	var ask func()
	ask = func() {
		if c.srvGone || !s.serving {
			return
		}
		if e.leader < 0 || !e.reachable(s, e.servers[e.leader]) {
			s.heldRevalidations = append(s.heldRevalidations, ask)
			return
		}
		e.after(2*e.cfg.PeerLatency, done)
	}
	ask()
}

// touch passes a client's sign of life to the leader's session tracker.
// A follower cut off from the leader cannot: it keeps answering the client
// (pings included) while the leader lets the session expire — the window
// of a minority partition.
func (s *server) touch(sess *session) {
	e := s.e
	if e.leader < 0 || !s.serving || !e.reachable(s, e.servers[e.leader]) {
		return
	}
	e.touch(sess)
}

// password derives a session's 16-byte password from its id (ZooKeeper
// seeds a Random with id ^ superSecret; here it only has to be fixed).
func password(id int64) []byte {
	out := make([]byte, 16)
	x := uint64(id)
	for i := range out {
		x += 0x9e3779b97f4a7c15
		z := (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		out[i] = byte(z ^ (z >> 31))
	}
	return out
}

// forward sends a write to the leader (one peer hop unless this server
// leads).
func (s *server) forward(p *proposal) {
	e := s.e
	if s.id-1 == e.leader {
		e.propose(p)
		return
	}
	e.after(e.cfg.PeerLatency, func() {
		if !s.serving || (p.origin != nil && p.origin.srvGone) {
			return
		}
		if e.leader < 0 || !e.reachable(s, e.servers[e.leader]) {
			// The link to the leader is cut: the request waits in the
			// follower's connection to it (TCP holds it) and goes on
			// if the link heals before syncLimit; if the follower gives
			// up first it stops serving and the request is gone.
			s.heldFwd = append(s.heldFwd, p)
			return
		}
		e.propose(p)
	})
}

// releaseForwards sends on the writes a cut held, once the follower can
// reach its leader again.
func (s *server) releaseForwards() {
	e := s.e
	if len(s.heldFwd)+len(s.heldRevalidations) == 0 || !s.serving || e.leader < 0 || !e.reachable(s, e.servers[e.leader]) {
		return
	}
	asks := s.heldRevalidations
	s.heldRevalidations = nil
	for _, ask := range asks {
		ask()
	}
	held := s.heldFwd
	s.heldFwd = nil
	for _, p := range held {
		s.forward(p)
	}
}

// pump answers the connection's requests in order; a write blocks the ones
// behind it until this server has applied it.
func (s *server) pump(c *Conn) {
	for !c.busy && len(c.fifo) > 0 && !c.srvGone && c.session != nil {
		r := c.fifo[0]
		c.fifo = c.fifo[1:]
		switch r.Op {
		case wire.OpPing:
			c.sendDown(wire.ReplyHeader(wire.XidPing, s.tree.zxid, wire.ErrOK).Frame(), false)
		case wire.OpClose:
			c.busy = true
			c.session.closing = true
			s.forward(&proposal{kind: opCloseSession, origin: c, sess: c.session.id, req: r})
		case wire.OpCreate, wire.OpDelete, wire.OpSetData, wire.OpMulti:
			c.busy = true
			s.forward(&proposal{kind: r.Op, origin: c, sess: c.session.id, req: r})
		case wire.OpSetWatches:
			s.setWatches(c, r)
			c.sendDown(wire.ReplyHeader(r.Xid, s.tree.zxid, wire.ErrOK).Frame(), false)
		default:
			c.sendDown(s.read(c, r), false)
		}
	}
}

// read answers exists, getData, getChildren(2) and sync from this
// server's tree, registering watches as DataTree does.
func (s *server) read(c *Conn, r wire.Request) []byte {
	zxid := s.tree.zxid
	if r.Op != wire.OpSync && !validPath(r.Path, false) {
		return wire.ReplyHeader(r.Xid, zxid, wire.ErrBadArguments).Frame()
	}
	n := s.tree.nodes[r.Path]
	switch r.Op {
	case wire.OpExists:
		// statNode adds the watch before it looks: an exists watch on a
		// missing node waits for its creation.
		if r.Watch {
			addWatch(s.dataW, r.Path, c)
		}
		if n == nil {
			return wire.ReplyHeader(r.Xid, zxid, wire.ErrNoNode).Frame()
		}
		e := wire.ReplyHeader(r.Xid, zxid, wire.ErrOK)
		e.Stat(n.wireStat())
		return e.Frame()
	case wire.OpGetData:
		if n == nil {
			return wire.ReplyHeader(r.Xid, zxid, wire.ErrNoNode).Frame()
		}
		if r.Watch {
			addWatch(s.dataW, r.Path, c)
		}
		e := wire.ReplyHeader(r.Xid, zxid, wire.ErrOK)
		e.Buffer(n.data)
		e.Stat(n.wireStat())
		return e.Frame()
	case wire.OpGetChildren, wire.OpGetChildren2:
		if n == nil {
			return wire.ReplyHeader(r.Xid, zxid, wire.ErrNoNode).Frame()
		}
		if r.Watch {
			addWatch(s.childW, r.Path, c)
		}
		e := wire.ReplyHeader(r.Xid, zxid, wire.ErrOK)
		e.Strings(s.tree.children(r.Path))
		if r.Op == wire.OpGetChildren2 {
			e.Stat(n.wireStat())
		}
		return e.Frame()
	case wire.OpSync:
		e := wire.ReplyHeader(r.Xid, zxid, wire.ErrOK)
		e.String(r.Path)
		return e.Frame()
	}
	return wire.ReplyHeader(r.Xid, zxid, wire.ErrUnimplemented).Frame()
}

// setWatches re-registers a reconnecting client's watches; whatever
// changed after the last zxid the client saw fires at once
// (DataTree.setWatches).
func (s *server) setWatches(c *Conn, r wire.Request) {
	zxid := s.tree.zxid
	for _, p := range r.DataWatches {
		n := s.tree.nodes[p]
		switch {
		case n == nil:
			s.notify(c, wire.EventNodeDeleted, p, zxid)
		case n.stat.Mzxid > r.RelativeZxid:
			s.notify(c, wire.EventNodeDataChanged, p, zxid)
		default:
			addWatch(s.dataW, p, c)
		}
	}
	for _, p := range r.ExistWatches {
		if s.tree.nodes[p] != nil {
			s.notify(c, wire.EventNodeCreated, p, zxid)
		} else {
			addWatch(s.dataW, p, c)
		}
	}
	for _, p := range r.ChildWatches {
		n := s.tree.nodes[p]
		switch {
		case n == nil:
			s.notify(c, wire.EventNodeDeleted, p, zxid)
		case n.stat.Pzxid > r.RelativeZxid:
			s.notify(c, wire.EventNodeChildrenChanged, p, zxid)
		default:
			addWatch(s.childW, p, c)
		}
	}
}

func addWatch(m map[string]map[*Conn]bool, path string, c *Conn) {
	if m[path] == nil {
		m[path] = map[*Conn]bool{}
	}
	m[path][c] = true
}

// take removes and returns the watchers of path in m, in connection order.
func take(m map[string]map[*Conn]bool, path string, into map[*Conn]bool) {
	for c := range m[path] {
		into[c] = true
	}
	delete(m, path)
}

// fire sends the notifications a transaction's triggers cause on this
// server: one per watching connection per trigger, a deleted node's data
// and child watchers told once (WatchManager.triggerWatch with the
// suppress set).
func (s *server) fire(trig []trigger, zxid int64) {
	for _, t := range trig {
		who := map[*Conn]bool{}
		switch t.typ {
		case wire.EventNodeCreated, wire.EventNodeDataChanged:
			take(s.dataW, t.path, who)
		case wire.EventNodeChildrenChanged:
			take(s.childW, t.path, who)
		case wire.EventNodeDeleted:
			take(s.dataW, t.path, who)
			take(s.childW, t.path, who)
		}
		conns := make([]*Conn, 0, len(who))
		for c := range who {
			conns = append(conns, c)
		}
		sort.Slice(conns, func(i, j int) bool {
			if conns[i].host != conns[j].host {
				return conns[i].host < conns[j].host
			}
			return conns[i].id < conns[j].id
		})
		for _, c := range conns {
			s.notify(c, t.typ, t.path, zxid)
		}
	}
}

func (s *server) notify(c *Conn, typ int32, path string, zxid int64) {
	if c.srvGone {
		return
	}
	s.e.stats.Notifications++
	c.sendDown(wire.Notification(zxid, typ, path), false)
}

// dropConn forgets a connection on the server side: its watches go with
// it (the session stays until it expires or is closed).
func (s *server) dropConn(c *Conn) {
	c.srvGone = true
	for i, x := range s.conns {
		if x == c {
			s.conns = append(s.conns[:i], s.conns[i+1:]...)
			break
		}
	}
	for _, m := range []map[string]map[*Conn]bool{s.dataW, s.childW} {
		for p, set := range m {
			delete(set, c)
			if len(set) == 0 {
				delete(m, p)
			}
		}
	}
}

// encodeResult is the reply to a write.
func encodeResult(xid int32, zxid int64, r result) []byte {
	if r.op != wire.OpMulti {
		e := wire.ReplyHeader(xid, zxid, r.err)
		if r.err != wire.ErrOK {
			return e.Frame()
		}
		switch r.op {
		case wire.OpCreate:
			e.String(r.path)
		case wire.OpSetData:
			e.Stat(r.stat)
		}
		return e.Frame()
	}
	// A multi's header carries no error; each op's result says how it
	// went (MultiResponse: MultiHeader + record, then a done header).
	e := wire.ReplyHeader(xid, zxid, wire.ErrOK)
	for _, sr := range r.multi {
		code := int32(0)
		if sr.op == wire.OpError {
			code = sr.err
		}
		e.Int(sr.op)
		e.Bool(false)
		e.Int(code)
		switch sr.op {
		case wire.OpCreate:
			e.String(sr.path)
		case wire.OpSetData:
			e.Stat(sr.stat)
		case wire.OpError:
			e.Int(sr.err)
		}
	}
	e.Int(-1)
	e.Bool(true)
	e.Int(-1)
	return e.Frame()
}
