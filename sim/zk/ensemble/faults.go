package ensemble

import (
	record "github.com/locklab/locklab/sim/event"
	"time"
)

// The faults the ensemble takes: a server crash and restart, partitions
// between servers and hosts and their healing, a paused or cut-off host.

// Crash stops a server: its connections are reset, and if it led, the
// others start an election.
//
// In world mode (as every method that changes the ensemble) call it with
// the world's kernel held: from a w.At event or a process.
func (e *Ensemble) Crash(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.crash(name)
}

func (e *Ensemble) crash(name string) {
	s := e.byName[name]
	if s == nil || !s.up {
		return
	}
	e.record(name, record.Event{Kind: record.ServerCrashed, Node: name})
	if e.w != nil {
		e.w.Net.SetDown(name, true)
	}
	s.up = false
	s.stopServing()
	if e.leader == s.id-1 {
		e.loseLeader()
	} else if e.leader >= 0 && !e.hasQuorum() {
		e.loseLeader()
	}
}

// Restart brings a crashed server back with its log (ZooKeeper fsyncs
// before acking); it joins the leader, or an election, after ElectionTime.
func (e *Ensemble) Restart(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.byName[name]
	if s == nil || s.up {
		return
	}
	s.up = true
	e.record(name, record.Event{Kind: record.ServerRestarted, Node: name, Count: s.logged})
	if e.w != nil {
		e.w.Net.SetDown(name, false)
	}
	// It rebuilds its tree from its log.
	s.tree = newTree()
	s.applied = 0
	for s.applied < s.logged {
		t := e.log[s.applied]
		s.applied++
		for _, ef := range t.effects {
			s.tree.apply(ef, t.zxid, t.ms)
		}
		s.tree.zxid = t.zxid
	}
	e.scheduleElection()
}

// Partition cuts every link between a and b (client hosts or server
// names). Links are symmetric.
//
// In world mode it cuts the world's network both ways (w.Net.Cut), which
// the ensemble hears through its hook: faults and tests act the same way.
func (e *Ensemble) Partition(a, b string) {
	if e.w != nil {
		e.w.Net.Cut(a, b)
		e.w.Net.Cut(b, a)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.partition(a, b)
}

func (e *Ensemble) partition(a, b string) {
	if a > b {
		a, b = b, a
	}
	e.cuts[[2]string{a, b}] = true
	// A cut between servers is noticed after syncLimit ticks.
	if e.byName[a] != nil && e.byName[b] != nil {
		e.after(time.Duration(e.cfg.SyncLimit)*e.cfg.TickTime, e.checkQuorum)
	}
}

// Heal restores the link between a and b; held messages are delivered.
func (e *Ensemble) Heal(a, b string) {
	if e.w != nil {
		e.w.Net.Heal(a, b)
		e.w.Net.Heal(b, a)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.heal(a, b)
}

func (e *Ensemble) heal(a, b string) {
	if a > b {
		a, b = b, a
	}
	delete(e.cuts, [2]string{a, b})
	for _, c := range e.conns {
		if !e.cut(c.host, c.server.name) && len(c.stalled) > 0 {
			c.release()
		}
	}
	if e.byName[a] != nil && e.byName[b] != nil {
		e.peersHealed()
	}
}

// peersHealed follows a link between servers coming back.
func (e *Ensemble) peersHealed() {
	// A follower healed before anyone noticed the cut still has its
	// connection to the leader: the proposals it missed arrive now (TCP
	// retransmits them), and it applies them; the writes it forwarded
	// meanwhile reach the leader.
	if e.leader >= 0 {
		l := e.servers[e.leader]
		for _, s := range e.servers {
			if s.serving && s != l && e.reachable(l, s) && s.logged < len(e.log) {
				s.logged = len(e.log)
				idx, s := len(e.log), s
				e.after(2*e.cfg.PeerLatency+e.cfg.ApplyLag[s.id], func() { s.applyUpTo(idx) })
			}
		}
		for _, s := range e.servers {
			s.releaseForwards()
		}
	}
	e.scheduleElection()
	e.flushStalled()
}

// Pause freezes a client host as a long GC pause or a stopped VM does:
// nothing it sends leaves and nothing sent to it is read until Resume (its
// connections hold the bytes, as the kernel's socket buffers would), and
// it dials nobody. The client library's own timers still run in the
// bubble: on resume they fire at once, as they would on a real host.
func (e *Ensemble) Pause(host string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.paused[host] = true
}

// Resume ends a Pause: held messages go out in order.
func (e *Ensemble) Resume(host string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resume(host)
}

func (e *Ensemble) resume(host string) {
	delete(e.paused, host)
	close(e.resumed)
	e.resumed = make(chan struct{})
	for _, c := range e.conns {
		if c.host == host && !e.cut(c.host, c.server.name) && len(c.stalled) > 0 {
			c.release()
		}
	}
}

// Drop resets every connection of a client host (a lost TCP segment that
// the stack gives up on, modelled as the reset it ends in).
func (e *Ensemble) Drop(host string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.conns {
		if c.host == host && !c.closed && c.rdErr == nil {
			c.reset("dropped")
		}
	}
}
