package sim

import (
	"fmt"
	"github.com/locklab/locklab/sim/event"
	"slices"
	"strconv"
	"time"
)

// Replication as Redis does it, asynchronously: the master ships every
// effect of its stream (effects.go) to each replica as an ordinary
// simulated message, lag after it ran, so it can be delayed, dropped, cut
// off or die with the master. Replicas acknowledge the offset they have
// applied every second (REPLCONF ACK) and at once when the master asks
// (REPLCONF GETACK, sent down the stream behind the writes, as WAIT does).
// Those acknowledgements drive WAIT and min-replicas-to-write.

// replicaLink is the master's view of one replica.
type replicaLink struct {
	replica   *RedisNode
	lag       time.Duration
	acked     int64         // highest offset the replica acknowledged
	ackLocal  time.Duration // master's local clock when that ack arrived
	cancelled bool          // the replica was promoted or follows another master
}

// Replicate makes replica follow n asynchronously, as Redis replication
// does. The replica first gets a full copy of n's dataset (the initial
// synchronisation, done at once: it stands for history before the run);
// from then on each effect is shipped lag after it ran. A write not yet
// shipped when the master dies is lost — the acknowledged-but-unreplicated
// window behind the failover scenarios.
func (n *RedisNode) Replicate(replica *RedisNode, lag time.Duration) {
	replica.detach()
	n.pruneStaleLinks(false)
	replica.master = n
	link := &replicaLink{replica: replica, lag: lag, acked: n.offset, ackLocal: n.Clock.Local(n.w.now)}
	n.links = append(n.links, link)
	replica.fullSync(n)
	replica.startAcks()
	if n.volatile() {
		n.activeExpiry()
	}
}

// detach ends the link from the node's current master, if any. The
// replica closes its connection; the master only learns of it if the close
// can reach it. Across a partition (or while the master is down) the master
// keeps the link, silent: no more REPLCONF ACKs arrive, so it stops counting
// as a good replica only once its last ACK is older than
// min-replicas-max-lag (replication.c refreshGoodSlavesCount) — the window
// in which a cut-off old master still accepts writes after a failover.
func (n *RedisNode) detach() {
	if n.master == nil {
		return
	}
	m := n.master
	closeSeen := m.up && n.w.Net.Reachable(n.Name, m.Name)
	m.links = slices.DeleteFunc(m.links, func(l *replicaLink) bool {
		if l.replica == n {
			l.cancelled = true
			return closeSeen
		}
		return false
	})
	n.master = nil
}

// pruneStaleLinks drops the links whose replica left while the master could
// not see it go; they are dropped when the master learns of it (it can reach
// the replica again, or is itself made a replica).
func (n *RedisNode) pruneStaleLinks(all bool) {
	n.links = slices.DeleteFunc(n.links, func(l *replicaLink) bool {
		return l.cancelled && (all || n.w.Net.Reachable(l.replica.Name, n.Name))
	})
}

// fullSync replaces the replica's dataset with the master's (a full
// resynchronisation: an RDB snapshot, then the stream from its offset).
func (n *RedisNode) fullSync(m *RedisNode) {
	m.syncClock()
	m.expireSweep()
	n.syncClock()
	for _, k := range n.allKeys() {
		n.dispatchEffect([]string{"DEL", k})
	}
	clear(n.shadow)
	n.aof = nil // the AOF is rewritten from the loaded snapshot
	for _, k := range m.allKeys() {
		if s, ok := m.readKey(k); ok {
			n.shadow[k] = s
			n.restoreKey(k, s, true)
			for _, c := range rebuild(k, keyState{}, false, s, true) {
				n.aof = append(n.aof, aofEntry{at: n.w.now, args: c})
			}
		}
	}
	n.offset = m.offset
	n.w.Record(n.Name, event.Event{Kind: event.ReplicationFullSync, Node: n.Name, From: m.Name, Keys: len(n.shadow), Offset: n.offset})
}

// ship sends one effect (or a GETACK, when args is nil) down the link.
func (n *RedisNode) ship(link *replicaLink, args []string, offset int64) {
	w := n.w
	replica := link.replica
	summary := "REPLCONF GETACK"
	op := "REPLCONF"
	if args != nil {
		summary, op = commandSummary(args), "REPLICATE"
	}
	incarnation := n.incarnation
	w.Net.Later(link.lag, func() {
		if !n.up || n.incarnation != incarnation {
			if args != nil {
				w.Record(n.Name, event.Event{Kind: event.ReplicationLost, Node: replica.Name, From: n.Name, To: replica.Name, Command: summary, Args: args, Offset: offset})
			}
			return
		}
		if link.cancelled {
			return // the replica was promoted or follows another master
		}
		m := &Message{From: n.Name, To: replica.Name, Client: n.Name, Dir: Request, Op: op, Summary: summary}
		if args != nil && w.Tracing() {
			// The effect as data, for the events of a message a fault or
			// a cut loses (built only when events are).
			m.Facts = &MessageFacts{Args: args}
		}
		w.Net.Send(m, func() {
			if replica.master != n || link.cancelled {
				return
			}
			if args == nil {
				replica.sendAck()
				return
			}
			replica.syncClock()
			replica.applyEffect(args)
			replica.offset = offset
			if w.Tracing() {
				w.Record(replica.Name, event.Event{Kind: event.ReplicationApplied, Node: replica.Name, From: n.Name, To: replica.Name, Command: summary, Args: args, Offset: offset, Clock: replica.Clock.Local(w.now)})
			}
		})
	})
}

// startAcks makes a replica acknowledge its offset every second of its own
// oscillator, as Redis replicas send REPLCONF ACK once a second.
func (n *RedisNode) startAcks() {
	if n.acking {
		return
	}
	n.acking = true
	var tick func()
	tick = func() {
		if n.master == nil {
			n.acking = false
			return
		}
		if n.up {
			n.sendAck()
		}
		n.w.After(n.Clock.TrueDuration(n.w.now, time.Second), tick)
	}
	n.w.After(n.Clock.TrueDuration(n.w.now, time.Second), tick)
}

// sendAck sends REPLCONF ACK offset to the master.
func (n *RedisNode) sendAck() {
	m, offset := n.master, n.offset
	if m == nil || !n.up {
		return
	}
	msg := &Message{From: n.Name, To: m.Name, Client: n.Name, Dir: Request, Op: "REPLCONF", Summary: "REPLCONF ACK " + strconv.FormatInt(offset, 10)}
	n.w.Net.Send(msg, func() {
		for _, l := range m.links {
			if l.replica == n {
				l.acked = max(l.acked, offset)
				l.ackLocal = m.Clock.Local(n.w.now)
			}
		}
		m.checkWaits()
	})
}

// goodReplicas counts the replicas whose last acknowledgement is at most
// maxLag old on the master's clock, in whole seconds as Redis counts
// (server.unixtime - repl_ack_time <= min-replicas-max-lag).
func (n *RedisNode) goodReplicas(maxLag time.Duration) int {
	now := n.Clock.Local(n.w.now)
	good := 0
	for _, l := range n.links {
		if (now-l.ackLocal)/time.Second <= maxLag/time.Second {
			good++
		}
	}
	return good
}

// writeRefusal is the error a master gives every write while too few
// replicas are connected and acknowledging, or "".
func (n *RedisNode) writeRefusal() string {
	if n.MinReplicasToWrite > 0 && n.goodReplicas(n.MinReplicasMaxLag) < n.MinReplicasToWrite {
		return "NOREPLICAS Not enough good replicas to write."
	}
	return ""
}

// waitRequest is a client blocked in WAIT numreplicas timeout.
type waitRequest struct {
	target  int64
	want    int
	reply   func([]byte)
	timer   *Event
	replied bool
}

func (n *RedisNode) ackedCount(target int64) int {
	c := 0
	for _, l := range n.links {
		if l.acked >= target {
			c++
		}
	}
	return c
}

// wait serves WAIT numreplicas timeout: it replies the number of replicas
// that acknowledged every write made before it, as soon as that reaches
// numreplicas or when timeout (ms, 0: for ever) passes on the master's
// clock. WAIT does not make replication synchronous: a write acknowledged by
// k replicas is still lost if a replica that did not acknowledge it is
// promoted.
func (n *RedisNode) wait(args []string, reply func([]byte)) {
	n.syncClock()
	n.Commands++
	if n.master != nil {
		reply(n.execReplica(nil, args))
		return
	}
	if len(args) != 3 {
		reply(errorReply("ERR wrong number of arguments for 'wait' command"))
		return
	}
	want, err1 := strconv.Atoi(args[1])
	timeout, err2 := strconv.ParseInt(args[2], 10, 64)
	if err1 != nil || err2 != nil {
		reply(errorReply("ERR value is not an integer or out of range"))
		return
	}
	if timeout < 0 {
		reply(errorReply("ERR timeout is negative"))
		return
	}
	r := &waitRequest{target: n.offset, want: want, reply: reply}
	// Without replicas WAIT still blocks until its timeout (replication.c
	// waitCommand only answers at once when enough replicas acknowledged).
	if got := n.ackedCount(r.target); got >= want {
		reply(intReply(got))
		return
	}
	n.waits = append(n.waits, r)
	for _, l := range n.links {
		n.ship(l, nil, 0)
	}
	if timeout > 0 {
		r.timer = n.w.After(n.Clock.TrueDuration(n.w.now, time.Duration(timeout)*time.Millisecond), func() {
			n.finishWait(r)
		})
	}
}

func (n *RedisNode) finishWait(r *waitRequest) {
	if r.replied {
		return
	}
	r.replied = true
	r.timer.Cancel()
	n.waits = slices.DeleteFunc(n.waits, func(x *waitRequest) bool { return x == r })
	r.reply(intReply(n.ackedCount(r.target)))
}

func (n *RedisNode) checkWaits() {
	for _, r := range slices.Clone(n.waits) {
		if n.ackedCount(r.target) >= r.want {
			n.finishWait(r)
		}
	}
}

// Master is the node a replica follows, or nil.
func (n *RedisNode) Master() *RedisNode { return n.master }

// Promote makes a replica the master, as a Sentinel failover does: it
// stops following its master, starts expiring keys on its own clock, and
// the old master's other replicas are reconfigured to follow it (a full
// resynchronisation). Clients learn of it as Sentinel-aware clients do
// (see NewClient): those that can reach the new master drop their
// connections to the old one and dial it; those cut off from it keep using
// the old master, which goes on serving them (a split brain) until it can
// reach the new master again and is turned into its replica, dropping its
// own data — or until it refuses writes for want of replicas
// (MinReplicasToWrite).
//
// Approximations: Sentinel's failure detection and vote are not modelled
// (the scenario says when the failover happens), and Sentinel runs beside
// the new master (what it can reach, Sentinel can reach).
func (n *RedisNode) Promote() error {
	old := n.master
	if old == nil {
		return fmt.Errorf("%s is not a replica", n.Name)
	}
	lag := 100 * time.Millisecond
	for _, l := range old.links {
		if l.replica == n {
			lag = l.lag
		}
	}
	// The promotion is traced before what it sets off: the new master's
	// clock sync and first expiry sweep may expire keys and propagate DELs
	// at this same instant, and those lines must read as its effects.
	n.w.Record(n.Name, event.Event{Kind: event.Promoted, Node: n.Name, From: old.Name})
	n.detach()
	n.promoted = nil
	old.promoted = n
	n.syncClock()
	n.startExpiring()
	for _, l := range slices.Clone(old.links) {
		if l.cancelled {
			continue // n itself, or a replica that already left, unseen
		}
		n.w.Record(l.replica.Name, event.Event{Kind: event.ReplicaFollows, Node: l.replica.Name, To: n.Name})
		n.Replicate(l.replica, l.lag)
	}
	for _, c := range slices.Clone(old.conns) {
		if n.w.Net.Reachable(c.host.Name, n.Name) {
			c.switchMaster(n) // +switch-master reaches the client
		}
	}
	n.rejoin(old, lag)
	return nil
}

// rejoin turns the old master into a replica of n as soon as it is up and
// can reach n (Sentinel reconfigures a returning old master), checking
// every 100 ms.
func (n *RedisNode) rejoin(old *RedisNode, lag time.Duration) {
	var check func()
	check = func() {
		if old.current() != n.current() || n.master != nil || old.master != nil {
			return // superseded by a later failover
		}
		if old.up && n.up && n.w.Net.Reachable(old.Name, n.Name) && n.w.Net.Reachable(n.Name, old.Name) {
			n.w.Record(old.Name, event.Event{Kind: event.MasterRejoined, Node: old.Name, To: n.Name})
			for _, c := range slices.Clone(old.conns) {
				c.switchMaster(n)
			}
			old.pruneStaleLinks(true)
			n.Replicate(old, lag)
			return
		}
		n.w.After(100*time.Millisecond, check)
	}
	n.w.After(100*time.Millisecond, check)
}

// current follows failovers to the node that now serves n's clients.
func (n *RedisNode) current() *RedisNode {
	for n.promoted != nil {
		n = n.promoted
	}
	return n
}

// masterFor is the master a client on host learns about when it dials n:
// it follows each failover whose new master it can reach (Sentinel runs
// beside the new master); cut off from it, it keeps the old one.
func (n *RedisNode) masterFor(host string) *RedisNode {
	for n.promoted != nil && n.w.Net.Reachable(host, n.promoted.Name) {
		n = n.promoted
	}
	return n
}
