package etcdnode

// Leases, as etcd's lessor keeps them. Grant and revoke go through the
// raft log, so every member knows every lease and the keys attached to it;
// only the leader (the "primary" lessor) times them. The leader measures a
// lease's expiry on its own monotonic clock (etcd reads time.Now, whose
// monotonic reading a wall-clock step does not move; a drifting oscillator
// does), and renewals (keep-alives) go to the leader only and are never
// logged: a follower's lessor holds every lease "forever".
//
// On a leader change the new leader's lessor is promoted: every lease gets
// its full TTL again, plus an extension of one election timeout (etcd's
// lessor Promote refreshes each lease with refresh(extend); without lease
// checkpoints, which etcd leaves off by default, the remaining TTL it
// restarts from is the whole TTL). So a leader change lengthens every
// lease: a client whose keep-alives stopped keeps its keys longer than
// its TTL said. The old leader's lessor is demoted: its leases no longer
// expire there.

import (
	"fmt"
	"slices"
	"time"
)

// forever is the expiry of a lease on a lessor that does not time it.
const forever = time.Duration(1<<63 - 1)

type lease struct {
	id       int64
	ttl      int64 // seconds
	expiry   time.Duration
	keys     map[string]bool
	revoking bool
	// waiting are keep-alives that arrived after the lease expired: etcd
	// answers them once the revoke is applied (TTL 0) or the leader steps
	// down (an error the client retries on).
	waiting []func(ttl int64, err error)
}

type lessor struct {
	leases  map[int64]*lease
	primary bool
}

func newLessor() *lessor { return &lessor{leases: map[int64]*lease{}} }

// ids lists the leases in id order (never map order).
func (l *lessor) ids() []int64 {
	ids := make([]int64, 0, len(l.leases))
	for id := range l.leases {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (l *lessor) grant(id, ttl int64, now time.Duration) *lease {
	ls := &lease{id: id, ttl: ttl, keys: map[string]bool{}, expiry: forever}
	if l.primary {
		ls.expiry = now + time.Duration(ttl)*time.Second
	}
	l.leases[id] = ls
	return ls
}

// remaining is a lease's TTL left in whole seconds, rounded up as etcd's
// Remaining/TimeToLive does, on the primary; a lessor that does not time
// it reports the full TTL.
func (ls *lease) remaining(now time.Duration) int64 {
	if ls.expiry == forever {
		return ls.ttl
	}
	left := ls.expiry - now
	if left <= 0 {
		return 0
	}
	return int64((left + time.Second - 1) / time.Second)
}

func (l *lessor) promote(now, extend time.Duration) {
	l.primary = true
	for _, id := range l.ids() {
		ls := l.leases[id]
		ls.expiry = now + extend + time.Duration(ls.ttl)*time.Second
	}
}

func (l *lessor) demote() {
	l.primary = false
	for _, id := range l.ids() {
		ls := l.leases[id]
		ls.expiry = forever
		ls.revoking = false
		for _, w := range ls.waiting {
			w(0, errNotPrimary)
		}
		ls.waiting = nil
	}
}

var errNotPrimary = fmt.Errorf("not the leader")

// expired lists the leases past their expiry not yet being revoked.
func (l *lessor) expired(now time.Duration) []*lease {
	var out []*lease
	for _, id := range l.ids() {
		if ls := l.leases[id]; !ls.revoking && ls.expiry <= now {
			out = append(out, ls)
		}
	}
	return out
}
