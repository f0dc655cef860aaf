package ensemble

import (
	"fmt"
	record "github.com/locklab/locklab/sim/event"
	"time"

	"github.com/locklab/locklab/sim/zk/wire"
)

// ZAB in the simulated ensemble: a proposal is committed once a quorum
// has it and is applied by every server in order; a leader that loses its
// quorum stops serving and a new one is elected.

// propose is a write arriving at the leader.
func (e *Ensemble) propose(p *proposal) {
	if e.leader < 0 || !e.hasQuorum() {
		e.stalled = append(e.stalled, p)
		return
	}
	e.commit(p)
}

func (e *Ensemble) hasQuorum() bool {
	if e.leader < 0 {
		return false
	}
	l := e.servers[e.leader]
	n := 0
	for _, s := range e.servers {
		if s.serving && e.reachable(l, s) {
			n++
		}
	}
	return l.up && n >= e.majority()
}

func (e *Ensemble) commit(p *proposal) {
	t := &txn{zxid: e.nextZxid(), ms: e.ms(), origin: p.origin, xid: p.req.Xid, kind: p.kind, session: p.sess}
	switch p.kind {
	case opCreateSession:
	case opCloseSession:
		t.effects = e.auth.closeSession(p.sess, t.zxid, t.ms)
		delete(e.sessions, p.sess)
	default:
		t.effects, t.res = e.auth.prepare(p.req, p.sess, t.zxid, t.ms)
	}
	e.auth.zxid = t.zxid
	if p.apply != nil {
		p.apply(t)
	}
	e.log = append(e.log, t)
	// The proposal goes to every follower; the leader commits when a
	// quorum acked (one round trip), and each server applies when the
	// commit reaches it.
	l := e.servers[e.leader]
	idx := len(e.log)
	for _, s := range e.servers {
		if !s.serving || !e.reachable(l, s) {
			continue
		}
		s.logged = idx
		d := 2 * e.cfg.PeerLatency
		if s != l {
			d += e.cfg.PeerLatency + e.cfg.ApplyLag[s.id]
		}
		s := s
		e.after(d, func() { s.applyUpTo(idx) })
	}
}

// applyUpTo applies log entries on one server, firing its watches and
// answering its clients.
func (s *server) applyUpTo(idx int) {
	e := s.e
	if !s.up {
		return
	}
	for s.applied < idx && s.applied < len(e.log) {
		t := e.log[s.applied]
		s.applied++
		s.applyTxn(t)
	}
}

func (s *server) applyTxn(t *txn) {
	e := s.e
	var trig []trigger
	for _, ef := range t.effects {
		trig = append(trig, s.tree.apply(ef, t.zxid, t.ms)...)
	}
	if t.zxid > s.tree.zxid {
		s.tree.zxid = t.zxid
	}
	s.fire(trig, t.zxid)
	if t.origin != nil && t.origin.server == s && !t.origin.srvGone {
		c := t.origin
		switch t.kind {
		case opCreateSession:
			if e.tracing() {
				ev := c.connEvent(record.SessionCreated)
				ev.Node, ev.Session, ev.Timeout = s.name, fmt.Sprintf("0x%x", t.session), time.Duration(t.connect.resp.Timeout)*time.Millisecond
				e.record(s.name, ev)
			}
			c.sendDown(t.connect.resp.Frame(), false)
		case opCloseSession:
			c.sendDown(wire.ReplyHeader(t.xid, t.zxid, wire.ErrOK).Frame(), false)
			c.serverClose()
		default:
			c.sendDown(encodeResult(t.xid, t.zxid, t.res), false)
		}
		c.busy = false
		s.pump(c)
	}
	if t.kind == opCloseSession && t.origin == nil {
		// An expired session: the server holding its connection closes
		// it (FinalRequestProcessor → closeSession).
		for _, c := range append([]*Conn{}, s.conns...) {
			if c.session != nil && c.session.id == t.session {
				c.serverClose()
			}
		}
	}
	_ = e
}

func (s *server) stopServing() {
	if s.serving {
		s.e.record(s.name, record.Event{Kind: record.ServerStopped, Node: s.name})
	}
	s.serving = false
	s.heldFwd = nil
	s.heldRevalidations = nil
	for _, c := range append([]*Conn{}, s.conns...) {
		if s.up {
			c.serverClose()
		} else {
			c.reset(s.name + " crashed")
		}
	}
}

// checkQuorum runs syncLimit ticks after a partition: followers cut from
// the leader stop serving; a leader without a quorum steps down.
func (e *Ensemble) checkQuorum() {
	if e.leader < 0 {
		e.scheduleElection()
		return
	}
	l := e.servers[e.leader]
	if !e.hasQuorum() {
		e.loseLeader()
		return
	}
	for _, s := range e.servers {
		if s.serving && !e.reachable(l, s) {
			s.stopServing()
		}
	}
}

func (e *Ensemble) loseLeader() {
	if e.leader >= 0 {
		e.record(e.servers[e.leader].name, record.Event{Kind: record.LeaderLost, Node: e.servers[e.leader].name, Epoch: e.epoch})
	}
	e.leader = -1
	for _, s := range e.servers {
		if s.serving {
			s.stopServing()
		}
	}
	e.stalled = nil
	e.scheduleElection()
}

func (e *Ensemble) scheduleElection() {
	if e.electing {
		return
	}
	e.electing = true
	e.after(e.cfg.ElectionTime, e.elect)
}

// elect runs after ElectionTime: LOOKING servers that can reach the
// leader join it; with no leader, a majority of mutually reachable servers
// elects the one with the most logged transactions, then the highest id.
func (e *Ensemble) elect() {
	e.electing = false
	if e.leader >= 0 {
		l := e.servers[e.leader]
		for _, s := range e.servers {
			if s.up && !s.serving && e.reachable(l, s) {
				s.follow()
			}
		}
		e.flushStalled()
		return
	}
	for _, c := range e.servers {
		if !c.up {
			continue
		}
		var group []*server
		for _, s := range e.servers {
			if e.reachable(c, s) {
				group = append(group, s)
			}
		}
		if len(group) < e.majority() {
			continue
		}
		best := group[0]
		for _, s := range group[1:] {
			if s.logged > best.logged || (s.logged == best.logged && s.id > best.id) {
				best = s
			}
		}
		e.stats.Elections++
		e.leader = best.id - 1
		e.epoch++
		e.record(best.name, record.Event{Kind: record.LeaderElected, Node: best.name, Epoch: e.epoch, Count: len(group), Total: len(e.servers)})
		e.counter = 0
		for _, s := range group {
			s.follow()
		}
		// The new leader restarts every session's clock.
		now := e.now()
		for _, ss := range e.sessions {
			ss.lastTouch = now
			ss.closing = false
		}
		e.startTicking()
		e.flushStalled()
		return
	}
}

// follow syncs a server with the log (DIFF/SNAP) and lets it serve.
func (s *server) follow() {
	if !s.serving && s.e.leader >= 0 && s.e.servers[s.e.leader] != s {
		s.e.record(s.name, record.Event{Kind: record.ServerFollows, Node: s.name, To: s.e.servers[s.e.leader].name})
	}
	s.logged = len(s.e.log)
	s.applyUpTo(s.logged)
	s.serving = true
}

func (e *Ensemble) flushStalled() {
	if !e.hasQuorum() {
		return
	}
	held := e.stalled
	e.stalled = nil
	for _, p := range held {
		if p.origin != nil && p.origin.srvGone {
			continue
		}
		e.commit(p)
	}
}
