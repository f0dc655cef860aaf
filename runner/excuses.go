package runner

import (
	"slices"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
)

// lockReach is what a waiter needs to be granted the lock: to reach
// Quorum of the Hosts that hold it. A Redis lock needs a majority of its
// lock nodes (Redlock's N/2+1; the one node of a single-instance lock;
// replicas and the token node take no part until promoted). A ZooKeeper or
// database client is served by any server it reaches, so it needs one.
// The checker gets this as data; nothing here reads the trace.
//
// A master with min-replicas-to-write refuses writes once fewer replicas
// than that acknowledge it (Redis's replication page, "Allow writes only
// with N attached replicas"), so a fault that parts it from its replicas
// keeps everybody from it: Guards holds, per such master, its replicas and
// how many it needs.
type lockReach struct {
	Clients []string
	Hosts   []string
	Quorum  int
	Guards  map[string]replicaGuard
}

// replicaGuard is a master's min-replicas-to-write rule.
type replicaGuard struct {
	Replicas []string
	Need     int
}

func reachOf(sc *scenarios.Scenario, backend Backend) lockReach {
	r := lockReach{Clients: sc.ClientNames()}
	if backend != nil {
		for _, h := range backend.Hosts() {
			r.Hosts = append(r.Hosts, h.Name)
		}
		r.Quorum = 1
		return r
	}
	for _, n := range sc.Nodes {
		if n.Replica == "" && n.Role == "" {
			r.Hosts = append(r.Hosts, n.Name)
		}
		if n.MinReplicasToWrite > 0 {
			g := replicaGuard{Need: n.MinReplicasToWrite}
			for _, m := range sc.Nodes {
				if m.Replica == n.Name {
					g.Replicas = append(g.Replicas, m.Name)
				}
			}
			if r.Guards == nil {
				r.Guards = map[string]replicaGuard{}
			}
			r.Guards[n.Name] = g
		}
	}
	r.Quorum = len(r.Hosts)/2 + 1
	return r
}

// cutOff reports whether losing the hosts for which lost is true leaves
// fewer than a quorum within reach.
func (r lockReach) cutOff(lost func(host string) bool) bool {
	left := 0
	for _, h := range r.Hosts {
		if !lost(h) {
			left++
		}
	}
	return left < r.Quorum
}

// starved reports whether master h, under min-replicas-to-write, keeps
// fewer replicas than it needs once those for which gone is true are lost.
func (r lockReach) starved(h string, gone func(replica string) bool) bool {
	g, ok := r.Guards[h]
	if !ok {
		return false
	}
	left := 0
	for _, rep := range g.Replicas {
		if !gone(rep) {
			left++
		}
	}
	return left < g.Need
}

// excusedWindows are the stretches during which faults alone keep a
// waiter from the lock (docs/design.md, "What a violation is"), each naming
// the waiters it excuses:
//   - a client's own pause excuses that client only;
//   - a partition excuses the clients it separates from enough lock hosts
//     that no quorum is left in reach, counting a master it parts from the
//     replicas its min-replicas-to-write needs as lost to everybody (a
//     partition between parties that are neither the waiter nor the lock
//     excuses nobody);
//   - a node's downtime, until its restart, excuses everybody if the lock
//     cannot be had without that node, nobody otherwise (one of Redlock's
//     five nodes down leaves a quorum);
//   - a drop rule excuses the clients whose messages to the lock it can
//     drop (its client, or all), while it is armed and, with a count, until
//     it dropped its last message;
//   - a delayed message between a client and a lock host excuses that
//     client until the message arrives.
//
// A client's crash needs no window: its want ends there. Faults with no
// end (a node that never comes back, a partition for good, a drop rule
// armed forever) and instantaneous ones (a single lost reply) excuse
// nothing: the lock must live with them.
func excusedWindows(applied []faults.Applied, delays []sim.Delayed, end time.Duration, reach lockReach) []checker.Window {
	var out []checker.Window
	for _, a := range applied {
		to := min(a.Until, end)
		if a.Spent > 0 {
			to = min(to, a.Spent)
		}
		if to <= a.At {
			continue
		}
		w := checker.Window{From: a.At, To: to, Why: a.Text}
		switch f := a.Fault; f.Kind {
		case faults.Pause:
			w.Client, w.Why = f.Target, "paused"
		case faults.Partition:
			w.Waiters = reach.partitioned(f)
		case faults.NodeCrash:
			down := func(h string) bool { return h == f.Target }
			if reach.cutOff(func(h string) bool { return down(h) || reach.starved(h, down) }) {
				w.Waiters = reach.Clients
			}
		case faults.Drop:
			w.Waiters = reach.dropped(f)
		default:
			continue
		}
		if w.Client != "" || len(w.Waiters) > 0 {
			out = append(out, w)
		}
	}
	for _, d := range delays {
		if d.To > d.From && d.Client != "" && (slices.Contains(reach.Hosts, d.Ends[0]) || slices.Contains(reach.Hosts, d.Ends[1])) {
			out = append(out, checker.Window{From: d.From, To: min(d.To, end), Waiters: []string{d.Client}, Why: "delayed " + d.Summary})
		}
	}
	return out
}

// partitioned lists the clients a partition leaves short of a quorum. A
// one-way cut breaks request and reply alike, so it separates as a
// two-way one does.
func (r lockReach) partitioned(f faults.Fault) []string {
	if len(f.Groups) != 2 {
		return nil
	}
	// side is 0 or 1 for a party the partition names, -1 for one it
	// leaves connected to everybody.
	side := func(x string) int {
		for k, g := range f.Groups {
			if slices.Contains(g, x) {
				return k
			}
		}
		return -1
	}
	apart := func(x, y string) bool { return side(x) >= 0 && side(y) >= 0 && side(x) != side(y) }
	var out []string
	for _, c := range r.Clients {
		lost := func(h string) bool {
			return apart(c, h) || r.starved(h, func(rep string) bool { return apart(h, rep) })
		}
		if r.cutOff(lost) {
			out = append(out, c)
		}
	}
	return out
}

// dropped lists the clients whose way to the lock a drop rule can block:
// those it matches (its client, or every client), when the node it
// matches (or every node) is one without which no quorum is left.
func (r lockReach) dropped(f faults.Fault) []string {
	if f.Node != "" && !r.cutOff(func(h string) bool { return h == f.Node }) {
		return nil
	}
	if f.Client != "" {
		if slices.Contains(r.Clients, f.Client) {
			return []string{f.Client}
		}
		return nil
	}
	return r.Clients
}
