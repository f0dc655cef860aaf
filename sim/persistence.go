package sim

import (
	"github.com/locklab/locklab/sim/event"
	"time"
)

// aofEntry is one command of the node's append-only file: an effect of the
// stream (effects.go), with absolute expiries, and the true time it was
// written (for everysec's fsync cut-off).
type aofEntry struct {
	at   time.Duration
	args []string
}

// AfterWrite registers fn to see every effect the node appends to its
// stream (AOF and replicas), after the command that caused it ran.
func (n *RedisNode) AfterWrite(fn func(args []string)) { n.onWrite = append(n.onWrite, fn) }

// AOF returns the node's append-only file so far, one command per entry.
func (n *RedisNode) AOF() [][]string {
	out := make([][]string, len(n.aof))
	for i, e := range n.aof {
		out[i] = e.args
	}
	return out
}

// Crash stops the node: messages to it are lost until Restart.
func (n *RedisNode) Crash() {
	if !n.up {
		return
	}
	n.up = false
	n.incarnation++ // writes queued for shipping die with the process
	n.crashedAt = n.w.now
	n.w.Net.SetDown(n.Name, true)
	for _, r := range n.waits {
		r.replied = true // the client's connection dies with the node
		r.timer.Cancel()
	}
	n.waits = nil
	n.w.Record(n.Name, event.Event{Kind: event.NodeCrashed, Node: n.Name})
}

// Restart brings a crashed node back with what its persistence mode saved,
// by replaying its append-only file on a fresh dataset:
//   - "none" (or ""): nothing; the node restarts empty, as in the
//     Redlock crash-restart story;
//   - "everysec": the writes fsynced by the last whole second before the
//     crash; writes of the last second are lost;
//   - "always": every acknowledged write.
//
// The file holds effects with absolute expiries (SET … PXAT, PEXPIREAT), so
// the downtime counts against TTLs and a key whose expiry passed while the
// node was down is gone, as in Redis. A replica then resynchronises with
// its master if it can.
func (n *RedisNode) Restart(persistence string) {
	if n.up {
		return
	}
	var keep []aofEntry
	switch persistence {
	case "always":
		keep = n.aof
	case "everysec":
		cutoff := n.crashedAt.Truncate(time.Second)
		for _, e := range n.aof {
			if e.at <= cutoff {
				keep = append(keep, e)
			}
		}
	}
	old := n.mr
	clear(n.loadedScripts)
	n.resetMiniredis()
	n.effectPeer, n.applyPeer = nil, nil
	clear(n.shadow)
	n.offset = 0
	// Replay as a replica applies the stream: keys without TTL, expiries in
	// the shadow; a master then starts expiring them on its own clock.
	master := n.master
	n.master = n // readKey takes expiries from the shadow during the replay
	for _, e := range keep {
		n.applyEffect(e.args)
	}
	n.master = master
	n.aof = append([]aofEntry(nil), keep...)
	old.Close()
	for _, c := range n.conns {
		c.peer = nil // connections do not survive a restart
	}
	n.up = true
	n.w.Net.SetDown(n.Name, false)
	if n.master == nil {
		n.startExpiring()
		// Its replicas reconnect and resynchronise with whatever it came
		// back with: a master restarted without persistence empties them
		// (Redis docs, "Safety of replication when master has persistence
		// turned off"). Links whose replica left unseen died with the
		// process.
		n.pruneStaleLinks(true)
		for _, l := range n.links {
			if l.replica.up {
				l.replica.fullSync(n)
				l.acked = n.offset
			}
		}
	} else if n.master.up {
		n.fullSync(n.master)
	}
	n.w.Record(n.Name, event.Event{Kind: event.NodeRestarted, Node: n.Name, Persistence: persistence, Count: len(keep), Keys: len(n.mr.Keys())})
}
