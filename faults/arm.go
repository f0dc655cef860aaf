package faults

import (
	"fmt"
	"github.com/locklab/locklab/sim/event"
	"strings"
	"time"

	"github.com/locklab/locklab/sim"
)

// Names is what a schedule may refer to.
type Names struct {
	Clients []string
	Nodes   []string
	// Replicas are the nodes that follow a master (failover targets).
	Replicas []string
	// Others are further hosts (the protected resource, ZooKeeper servers).
	Others []string
	// Servers are the hosts of Others that a node-crash may name: the
	// servers of a backend that crash and restart (a ZooKeeper ensemble's
	// zk1…zkN). They have no persistence setting: ZooKeeper fsyncs its
	// transaction log before it acknowledges a write.
	Servers []string
	// Standbys are servers of Others a failover may promote (a Postgres
	// standby).
	Standbys []string
	// NothingToPromote says, when there are neither Replicas nor
	// Standbys, how this scenario's backend gets something a failover
	// can promote ("" : a Redis node with replica_of).
	NothingToPromote string
}

func (n Names) hosts() []string {
	return append(append(append([]string(nil), n.Clients...), n.Nodes...), n.Others...)
}

// Server is a backend server a node-crash can act on.
type Server interface {
	// Crash stops the server at once: its connections reset, it takes no
	// part in the backend's protocol until Restart.
	Crash()
	// Restart brings it back with what it had durably logged.
	Restart()
}

// Promoter is a server a failover may promote: a standby that takes over
// its primary's address.
type Promoter interface {
	Promote() error
}

// Targets are the simulated things a schedule acts on, by name.
type Targets struct {
	Clients map[string]*sim.Host
	Nodes   map[string]*sim.RedisNode
	// Hosts has every host by name (clients, nodes, others).
	Hosts map[string]*sim.Host
	// Servers are a backend's servers by name (see Names.Servers).
	Servers map[string]Server
	// JumpIgnored and DriftIgnored name hosts whose clock a clock-jump
	// (a drift) can set but nothing reads in a way it would change, with
	// the reason: a client that times its lease with the monotonic clock
	// ignores steps of the wall clock, ZooKeeper times sessions with
	// System.nanoTime. Such a fault fires and changes nothing.
	JumpIgnored, DriftIgnored map[string]string
	// Spared are hosts whose messages drop, delay and partition faults
	// leave alone: the harness's own bookkeeping (the protected resource
	// of a locktest run, scenarios.Resource.Reliable), which is not the
	// lock's traffic.
	Spared map[string]bool
}

// Talker says whether two hosts ever exchanged a message (sim.Network).
type Talker interface{ Talked(a, b string) bool }

// has says whether the host a targeted fault acts on exists in this run.
func (t Targets) has(f Fault) bool {
	switch f.Kind {
	case Pause, Crash, Hang:
		return t.Clients[f.Target] != nil
	case Failover:
		_, standby := t.Servers[f.Target].(Promoter)
		return t.Nodes[f.Target] != nil || standby
	case ClockJump, Drift:
		return t.Hosts[f.Target] != nil
	case NodeCrash:
		return t.Nodes[f.Target] != nil || t.Servers[f.Target] != nil
	}
	return true
}

// Applied records a fault taking effect, for reports.
type Applied struct {
	At    time.Duration `json:"at_ns"`
	Until time.Duration `json:"until_ns,omitempty"`
	// Spent is when a drop rule with a count dropped its last message: it
	// acts on nothing after that (0: never spent).
	Spent time.Duration `json:"-"`
	Fault Fault         `json:"fault"`
	Text  string        `json:"text"`
}

// Arm schedules every fault of s in w. Each fault that takes effect is
// appended to *log.
func Arm(w *sim.World, t Targets, s Schedule, log *[]Applied) { ArmWatched(w, t, s, log) }

// Firing records, per fault of a schedule, whether it fired and, for drop
// and delay rules, how many messages it matched: a fault that never fired
// (its time after the run, a trigger on a message nobody sends) or a rule
// that matched nothing changed nothing, and the user should hear so.
type Firing struct {
	Fired   []bool
	Matched []int
	// At is when each fault fired; Inert says, for a fault that fired
	// but could not act (a crash of a node already down, a clock nothing
	// reads), why.
	At    []time.Duration
	Inert []string
	// plain says a fault names only clients and Redis nodes, whose every
	// message goes through sim.Network (a ZooKeeper ensemble has its own
	// transport), so the network's record judges it.
	plain []bool
	// lastSeen is the last time a message reached or left each host.
	lastSeen map[string]time.Duration
}

// Silent lists, for each fault that changed nothing, its index and why.
// net, when not nil, tells which hosts ever exchanged a message: a
// partition between hosts that never talk cuts nothing.
func (f *Firing) Silent(s Schedule, net Talker) []string {
	var out []string
	failover := false
	for _, fl := range s {
		failover = failover || fl.Kind == Failover
	}
	for i, fl := range s {
		switch {
		case f.Fired[i] && f.Inert[i] != "":
			out = append(out, fmt.Sprintf("faults[%d] (%s) changed nothing: %s", i, fl.Kind, f.Inert[i]))
		case f.Fired[i] && f.plain[i] && (fl.Kind == ClockJump || fl.Kind == Drift) && f.quietAfter(fl.Target, f.At[i]):
			out = append(out, fmt.Sprintf("faults[%d] (%s) changed nothing: no message reached or left %s after it, so nothing read its clock", i, fl.Kind, fl.Target))
		case f.Fired[i] && f.plain[i] && fl.Kind == Partition && net != nil && !failover && !crossed(fl, net):
			out = append(out, fmt.Sprintf("faults[%d] (%s) changed nothing: no host of %v ever exchanged a message with one of %v", i, fl.Kind, fl.Groups[0], fl.Groups[1]))
		case !f.Fired[i] && fl.After != nil:
			out = append(out, fmt.Sprintf("faults[%d] (%s) never fired: no message matched its trigger (%s)", i, fl.Kind, fl.After.String()))
		case !f.Fired[i]:
			out = append(out, fmt.Sprintf("faults[%d] (%s) never fired: the run ended first", i, fl.Kind))
		case (fl.Kind == Drop || fl.Kind == Delay) && f.Matched[i] == 0:
			out = append(out, fmt.Sprintf("faults[%d] (%s) matched no message: %s", i, fl.Kind, fl.String()))
		}
	}
	return out
}

// plain says whether every host f names is a client or a Redis node.
func (t Targets) plain(f Fault) bool {
	hosts := append([]string{f.Target}, f.Node, f.Client)
	for _, g := range f.Groups {
		hosts = append(hosts, g...)
	}
	for _, h := range hosts {
		if h != "" && t.Clients[h] == nil && t.Nodes[h] == nil {
			return false
		}
	}
	return true
}

// quietAfter says whether host was a client or Redis node that no message
// reached or left after t (hosts without a clock of their own in the
// simulation are not judged here).
func (f *Firing) quietAfter(host string, t time.Duration) bool {
	last, ok := f.lastSeen[host]
	return !ok || last <= t
}

// crossed says whether any host of one side of a partition ever exchanged
// a message with a host of the other, in either direction, at any time.
// Without a failover, a cut between hosts that never talk changes nothing
// (a failover asks whether hosts could reach each other, so it is left out).
func crossed(f Fault, net Talker) bool {
	for _, a := range f.Groups[0] {
		for _, b := range f.Groups[1] {
			if net.Talked(a, b) {
				return true
			}
		}
	}
	return false
}

// ArmWatched is Arm that also reports which faults fired.
func ArmWatched(w *sim.World, t Targets, s Schedule, log *[]Applied) *Firing {
	firing := &Firing{Fired: make([]bool, len(s)), Matched: make([]int, len(s)),
		At: make([]time.Duration, len(s)), Inert: make([]string, len(s)), plain: make([]bool, len(s)), lastSeen: map[string]time.Duration{}}
	w.Net.Observe(func(m *sim.Message) {
		firing.lastSeen[m.From] = w.Now()
		firing.lastSeen[m.To] = w.Now()
	})
	for i := range s {
		f := s[i]
		fire := func() {
			firing.Fired[i] = true
			firing.At[i] = w.Now()
			firing.Inert[i] = inert(w, t, f)
			firing.plain[i] = t.plain(f)
			apply(w, t, f, log, &firing.Matched[i])
		}
		switch {
		case f.At != nil:
			w.At(time.Duration(*f.At), fire)
		case f.After != nil:
			armTrigger(w, f.After, fire)
		default:
			w.At(0, fire)
		}
	}
	return firing
}

// plumbing are messages a trigger without an op does not count: connection
// handshakes and heartbeats (a replica's REPLCONF ACK) say nothing about the
// lock.
var plumbing = map[string]bool{"HELLO": true, "CLIENT": true, "PING": true, "CONNECT": true, "SETWATCHES": true, "REPLCONF": true}

func armTrigger(w *sim.World, tr *Trigger, fire func()) {
	nth := max(tr.Nth, 1)
	dir := sim.Reply
	if tr.Dir == "request" {
		dir = sim.Request
	}
	seen := 0
	w.Net.Observe(func(m *sim.Message) {
		if seen >= nth || m.Dir != dir {
			return
		}
		if tr.Client != "" && m.Client != tr.Client {
			return
		}
		if tr.Node != "" && m.From != tr.Node && m.To != tr.Node {
			return
		}
		if tr.Op != "" && !strings.EqualFold(tr.Op, m.Op) || tr.Op == "" && plumbing[m.Op] {
			return
		}
		seen++
		if seen == nth {
			fire()
		}
	})
}

// inert says why a fault about to fire cannot act, or "".
func inert(w *sim.World, t Targets, f Fault) string {
	if !t.has(f) {
		return ""
	}
	switch f.Kind {
	case ClockJump:
		return t.JumpIgnored[f.Target]
	case Drift:
		return t.DriftIgnored[f.Target]
	case NodeCrash:
		if n, ok := t.Nodes[f.Target]; ok && !n.Up() {
			return f.Target + " was already down"
		}
		if srv, ok := t.Servers[f.Target].(interface{ Down() bool }); ok && srv.Down() {
			return f.Target + " was already down"
		}
	case Crash:
		if t.Clients[f.Target].Crashed() {
			return f.Target + " had already crashed"
		}
	case Failover:
		// A second failover of a standby already promoted promotes
		// nothing (issue 32).
		if srv, ok := t.Servers[f.Target].(interface{ Primary() bool }); ok && srv.Primary() {
			return f.Target + " was the primary already (an earlier failover promoted it)"
		}
	}
	return ""
}

func apply(w *sim.World, t Targets, f Fault, log *[]Applied, matched *int) {
	now := w.Now()
	if !t.has(f) {
		// The schedule names a host this world does not have: a compare:
		// run of an algorithm on another backend (a Redis lock's node A
		// beside an ensemble's zk1…zk3). The fault cannot act here, and
		// reaching for the missing host dereferenced nil (issue 25).
		w.Record("faults", event.Event{Kind: event.FaultSkipped, Fault: f.String(), Node: f.Target})
		return
	}
	rec := Applied{At: now, Fault: f, Text: f.String()}
	w.Record("faults", event.Event{Kind: event.FaultApplied, Fault: f.String(), Node: f.Target})
	switch f.Kind {
	case Pause:
		h := t.Clients[f.Target]
		h.Pause()
		rec.Until = now + f.Duration.D()
		w.After(f.Duration.D(), h.Resume)
	case Crash:
		t.Clients[f.Target].Crash()
	case Hang:
		if p := t.Clients[f.Target].Main(); p != nil {
			p.Hang()
			if f.Duration > 0 {
				rec.Until = now + f.Duration.D()
				w.After(f.Duration.D(), p.Unhang)
			}
		}
	case Failover:
		var err error
		if n := t.Nodes[f.Target]; n != nil {
			err = n.Promote()
		} else {
			err = t.Servers[f.Target].(Promoter).Promote()
		}
		if err != nil {
			w.Record("faults", event.Event{Kind: event.FaultRefused, Fault: f.String(), Node: f.Target, Reason: err.Error()})
		}
	case ClockJump:
		t.Hosts[f.Target].Clock.Jump(now, f.Jump.D())
	case Drift:
		t.Hosts[f.Target].Clock.SetRate(now, f.PPM)
	case Drop, Delay:
		if f.Duration > 0 && f.Kind == Drop {
			rec.Until = now + f.Duration.D()
		}
		spent := func() {}
		if log != nil {
			idx := len(*log) // rec is appended below, before any message
			spent = func() { (*log)[idx].Spent = w.Now() }
		}
		w.Net.AddFilter(messageRule(w, f, now, matched, spent, t.Spared))
	case NodeCrash:
		if n, ok := t.Nodes[f.Target]; ok {
			n.Crash()
			if f.RestartAfter > 0 {
				rec.Until = now + f.RestartAfter.D()
				w.After(f.RestartAfter.D(), func() { n.Restart(f.Persistence) })
			}
			break
		}
		srv := t.Servers[f.Target]
		srv.Crash()
		if f.RestartAfter > 0 {
			rec.Until = now + f.RestartAfter.D()
			w.After(f.RestartAfter.D(), srv.Restart)
		}
	case Partition:
		if f.Duration > 0 {
			rec.Until = now + f.Duration.D()
		}
		cut(w, f, true, t.Spared)
		if f.Duration > 0 {
			w.After(f.Duration.D(), func() {
				cut(w, f, false, t.Spared)
				w.Record("faults", event.Event{Kind: event.FaultHealed, Fault: f.String(), Node: f.Target})
			})
		}
	case Heal:
		w.Net.HealAll()
	}
	if log != nil {
		*log = append(*log, rec)
	}
}

func cut(w *sim.World, f Fault, on bool, spared map[string]bool) {
	a, b := f.Groups[0], f.Groups[1]
	for _, x := range a {
		for _, y := range b {
			if spared[x] || spared[y] {
				continue
			}
			if on {
				w.Net.Cut(x, y)
				if !f.OneWay {
					w.Net.Cut(y, x)
				}
			} else {
				w.Net.Heal(x, y)
				w.Net.Heal(y, x)
			}
		}
	}
}

// messageRule builds the network filter of a drop or delay fault.
// spent is called when a rule with a count uses its last message.
func messageRule(w *sim.World, f Fault, armed time.Duration, matched *int, spent func(), spared map[string]bool) sim.Filter {
	used := 0
	return func(m *sim.Message) (bool, time.Duration, string) {
		if spared[m.From] || spared[m.To] {
			return false, 0, ""
		}
		if f.Duration > 0 && f.Kind == Drop && w.Now() >= armed+f.Duration.D() {
			return false, 0, ""
		}
		if f.Count > 0 && used >= f.Count {
			return false, 0, ""
		}
		if f.Dir != "" && string(m.Dir) != f.Dir {
			return false, 0, ""
		}
		if f.Client != "" && m.Client != f.Client {
			return false, 0, ""
		}
		if f.Node != "" && m.From != f.Node && m.To != f.Node {
			return false, 0, ""
		}
		if f.Op != "" && !strings.EqualFold(f.Op, m.Op) {
			return false, 0, ""
		}
		if f.Probability > 0 && f.Probability < 1 && w.Rand().Float64() >= f.Probability {
			return false, 0, ""
		}
		if used++; used == f.Count {
			spent()
		}
		if matched != nil {
			*matched++
		}
		if f.Kind == Delay {
			return false, f.Duration.D(), "fault: " + f.String()
		}
		return true, 0, "fault: " + f.String()
	}
}
