package sim

import (
	"fmt"
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
	replica.master = n
	replica.promoted = nil
	link := &replicaLink{replica: replica, lag: lag, acked: n.offset, ackLocal: n.Clock.Local(n.w.now)}
	n.links = append(n.links, link)
	replica.fullSync(n)
	replica.startAcks()
	if n.volatile() {
		n.activeExpiry()
	}
}

// detach ends the link from the node's current master, if any.
func (n *RedisNode) detach() {
	if n.master == nil {
		return
	}
	m := n.master
	m.links = slices.DeleteFunc(m.links, func(l *replicaLink) bool {
		if l.replica == n {
			l.cancelled = true
			return true
		}
		return false
	})
	n.master = nil
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
	for _, k := range m.allKeys() {
		if s, ok := m.readKey(k); ok {
			n.shadow[k] = s
			n.restoreKey(k, s, true)
		}
	}
	n.offset = m.offset
	n.w.Tracef(n.Name, "full sync from %s: %d keys, offset %d", m.Name, len(n.shadow), n.offset)
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
	w.Net.Later(link.lag, func() {
		if !n.up {
			if args != nil {
				w.Tracef(n.Name, "replication of %s to %s lost: %s is down", summary, replica.Name, n.Name)
			}
			return
		}
		if link.cancelled {
			return // the replica was promoted or follows another master
		}
		m := &Message{From: n.Name, To: replica.Name, Client: n.Name, Dir: Request, Op: op, Summary: summary}
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
			w.Tracef(replica.Name, "replicated %s (offset %d)", summary, offset)
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
	if got := n.ackedCount(r.target); got >= want || len(n.links) == 0 {
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

// Promote makes a replica the master (a Sentinel failover): it stops
// following its master and starts expiring keys on its own clock, and
// clients that dial the old master reach it.
func (n *RedisNode) Promote() error {
	old := n.master
	if old == nil {
		return fmt.Errorf("%s is not a replica", n.Name)
	}
	n.detach()
	old.promoted = n
	n.syncClock()
	n.startExpiring()
	n.w.Tracef(n.Name, "failover: %s promoted to master in place of %s", n.Name, old.Name)
	return nil
}

// current follows failovers to the node that now serves n's clients.
func (n *RedisNode) current() *RedisNode {
	for n.promoted != nil {
		n = n.promoted
	}
	return n
}
