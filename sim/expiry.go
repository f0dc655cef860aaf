package sim

import (
	"github.com/locklab/locklab/sim/event"
	"slices"
	"time"
)

// Expiry as Redis does it on a master (expire.c): a key whose time has come
// is deleted lazily, when a command touches the node, or by the active
// expiry cycle, and the deletion is propagated as a DEL to the AOF and the
// replicas. Replicas never expire keys themselves; they wait for that DEL.

// expireSweep propagates a DEL for every key the stream still describes
// that miniredis has expired. Run before each command (Redis's lazy expiry
// deletes a key when it is touched and propagates the DEL first) and every
// 100 ms of true time on a master with replicas (the active expiry cycle,
// hz 10). Redis samples 20 volatile keys per cycle; with the handful of keys
// a lock uses, every expired key is found in the next cycle.
func (n *RedisNode) expireSweep() {
	if n.master != nil {
		return // a replica never expires keys itself; it waits for the DEL
	}
	// miniredis's TTLs are aligned to the shadow's expiries (readKey), so
	// only a key whose expiry the clock has reached can be gone.
	local := n.Clock.Local(n.w.now)
	var gone []string
	for k, s := range n.shadow {
		if s.expireAt > 0 && s.expireAt <= local && !n.exists(k) {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		delete(n.shadow, k)
		n.w.Record(n.Name, event.Event{Kind: event.KeyExpired, Node: n.Name, Key: k, Clock: local})
		n.emit([]string{"DEL", k})
	}
}

// volatile reports whether some key the stream describes has an expiry.
func (n *RedisNode) volatile() bool {
	for _, s := range n.shadow {
		if s.expireAt > 0 {
			return true
		}
	}
	return false
}

// activeExpiry runs the master's expiry cycle every 100 ms of true time
// while it has replicas and volatile keys, so an expired lock reaches the
// replicas as a DEL even if no client touches it.
func (n *RedisNode) activeExpiry() {
	if n.expiryTimer || len(n.links) == 0 {
		return
	}
	n.expiryTimer = true
	var tick func()
	tick = func() {
		if !n.up || n.master != nil || !n.volatile() {
			n.expiryTimer = false
			return
		}
		n.syncClock()
		n.expireSweep()
		n.w.After(100*time.Millisecond, tick)
	}
	n.w.After(100*time.Millisecond, tick)
}

// startExpiring turns the shadow's expiries into miniredis TTLs: a replica
// promoted to master, or a node that replayed its AOF, now expires keys on
// its own clock. Keys already past their expiry go at once (as a DEL in the
// stream, by the next sweep).
func (n *RedisNode) startExpiring() {
	n.catchUp()
	local := n.Clock.Local(n.w.now)
	for _, k := range n.allKeys() {
		s, ok := n.shadow[k]
		if !ok || s.expireAt == 0 {
			continue
		}
		if s.expireAt <= local {
			n.mr.Del(k)
		} else {
			n.mr.SetTTL(k, s.expireAt-local)
		}
	}
	n.expireSweep()
	n.activeExpiry()
}

// expiredOnReplica lists the keys a replica holds whose expiry its own clock
// has passed: reads must not see them.
func (n *RedisNode) expiredOnReplica() []string {
	local := n.Clock.Local(n.w.now)
	var out []string
	for k, s := range n.shadow {
		if s.expireAt > 0 && s.expireAt <= local {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
