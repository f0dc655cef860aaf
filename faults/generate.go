package faults

// Random schedules, swarm style: a schedule holds one to four faults, each
// of a class drawn from the classes enabled for the run, at random times,
// against random targets, with magnitudes scaled by the lock's TTL so that
// "a pause longer than the lease" comes up as often for a 2 s lock as for a
// 30 s one. Enabling only some classes per run (swarm testing) finds more
// bugs than enabling everything at once, because a fault class that masks
// another (a crash hides a pause) is often simply absent.
//
// Everything is drawn from the *rand.Rand the caller passes in, so a
// schedule is a pure function of that generator's state. ShrinkCandidates
// proposes simpler neighbours of a schedule, for an explorer that wants a
// minimal counterexample.

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Class is a family of faults a generator may draw from.
type Class string

const (
	ClassClock     Class = "clock"     // clock jumps, forward and backward, on nodes and clients
	ClassDrift     Class = "drift"     // a node or client clock runs fast or slow, up to ±5%
	ClassPause     Class = "pause"     // a client stops (GC, SIGSTOP), sometimes for longer than the TTL
	ClassDrop      Class = "drop"      // requests or replies are lost, by client, node and op
	ClassDelay     Class = "delay"     // messages arrive late, sometimes later than the TTL
	ClassCrash     Class = "crash"     // a client dies
	ClassRestart   Class = "restart"   // a Redis node crashes and restarts with what it persisted
	ClassPartition Class = "partition" // one-way and two-way partitions that heal after a while
)

var classes = []Class{ClassClock, ClassDrift, ClassPause, ClassDrop, ClassDelay, ClassCrash, ClassRestart, ClassPartition}

// Classes lists every fault class in a fixed order (the column order of a
// matrix).
func Classes() []Class { return slices.Clone(classes) }

// ClassSummary says in a few words what a class draws, for help texts and
// legends.
func ClassSummary(c Class) string {
	switch c {
	case ClassClock:
		return "a node or client clock jumps +0.1..2×TTL or -0.1..1×TTL"
	case ClassDrift:
		return "a node or client clock runs up to 5% fast or slow"
	case ClassPause:
		return "a client pauses 0.1..3×TTL, at a time or after a reply"
	case ClassDrop:
		return "the first 1-3 matching messages, or a share for a while, are lost"
	case ClassDelay:
		return "1-3 messages, or a share (max 10), late 0.05..0.5×TTL or 1..2×TTL"
	case ClassCrash:
		return "a client dies, at a time or right after a reply"
	case ClassRestart:
		return "a Redis node or ZooKeeper server restarts after 0.1..2×TTL"
	case ClassPartition:
		return "hosts are cut off, one way or both, for 0.25..3×TTL"
	}
	return ""
}

func classNames() string {
	var s []string
	for _, c := range classes {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

// ParseClasses reads a comma-separated list of classes ("clock,pause"); "all"
// stands for every class. Duplicates are dropped; the order is kept.
func ParseClasses(list string) ([]Class, error) {
	var out []Class
	for _, part := range strings.Split(list, ",") {
		name := Class(strings.TrimSpace(part))
		switch {
		case name == "":
			continue
		case name == "all":
			for _, c := range classes {
				if !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		case !slices.Contains(classes, name):
			return nil, fmt.Errorf("unknown fault class %q; expected a comma-separated list of %s (or all)", name, classNames())
		case !slices.Contains(out, name):
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fault class given; expected a comma-separated list of %s (or all)", classNames())
	}
	return out, nil
}

// ClassOf says which class a fault belongs to; ok is false for kinds no
// generator draws (heal, and kinds only written by hand).
func ClassOf(f Fault) (c Class, ok bool) {
	switch f.Kind {
	case ClockJump:
		return ClassClock, true
	case Drift:
		return ClassDrift, true
	case Pause:
		return ClassPause, true
	case Drop:
		return ClassDrop, true
	case Delay:
		return ClassDelay, true
	case Crash:
		return ClassCrash, true
	case NodeCrash:
		return ClassRestart, true
	case Partition:
		return ClassPartition, true
	}
	return "", false
}

// Classes lists the classes of the schedule's faults, in the order of
// Classes().
func (s Schedule) Classes() []Class {
	var out []Class
	for _, c := range classes {
		for _, f := range s {
			if fc, ok := ClassOf(f); ok && fc == c {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// Applicable reports whether class c can draw a fault against n: pauses and
// crashes need a client, restarts a Redis node or a server, partitions two
// hosts.
func Applicable(c Class, n Names) bool {
	switch c {
	case ClassPause, ClassCrash:
		return len(n.Clients) > 0
	case ClassRestart:
		return len(n.Nodes)+len(n.Servers) > 0
	case ClassPartition:
		return len(n.hosts()) >= 2
	case ClassClock, ClassDrift:
		return len(n.hosts()) > 0
	case ClassDrop, ClassDelay:
		return true
	}
	return false
}

// Generate draws a schedule of one to four faults. Each fault's class is
// drawn from classes (those with nothing to act on in n are skipped; with
// none left the schedule is empty), its time from [0, horizon), its targets
// from n, and its magnitudes — pause and delay lengths, clock jumps,
// restart delays, partition lengths — as multiples of ttl. Pauses and
// crashes fire either at a time or right after the client receives its
// nth READ or WRITE reply, which is where a pause hurts most. The result
// depends only on rng's state, and every fault passes Validate(n).
func Generate(rng *rand.Rand, classes []Class, n Names, horizon, ttl time.Duration) Schedule {
	var enabled []Class
	for _, c := range classes {
		if Applicable(c, n) && !slices.Contains(enabled, c) {
			enabled = append(enabled, c)
		}
	}
	if len(enabled) == 0 {
		return nil
	}
	g := gen{rng: rng, n: n, horizon: max(horizon, 0), ttl: max(ttl, time.Millisecond)}
	count := 1 + rng.IntN(4)
	s := make(Schedule, 0, count)
	for range count {
		s = append(s, g.fault(enabled[rng.IntN(len(enabled))]))
	}
	// List faults in the order they take effect (those armed from the
	// start first, those waiting for a message last), so a schedule reads
	// as a story.
	slices.SortStableFunc(s, func(a, b Fault) int { return cmp.Compare(startKey(a), startKey(b)) })
	return s
}

func startKey(f Fault) time.Duration {
	switch {
	case f.At != nil:
		return f.At.D()
	case f.After != nil:
		return time.Duration(math.MaxInt64)
	}
	return 0
}

type gen struct {
	rng          *rand.Rand
	n            Names
	horizon, ttl time.Duration
}

// scaled draws a duration uniformly from [lo·ttl, hi·ttl], in whole
// milliseconds and at least 1ms.
func (g *gen) scaled(lo, hi float64) Duration {
	a := time.Duration(lo * float64(g.ttl))
	b := time.Duration(hi * float64(g.ttl))
	d := a
	if b > a {
		d += time.Duration(g.rng.Int64N(int64(b-a) + 1))
	}
	return Duration(max(d.Truncate(time.Millisecond), time.Millisecond))
}

// at draws a true time in [0, horizon), in whole milliseconds.
func (g *gen) at() *Duration {
	var d time.Duration
	if g.horizon > 0 {
		d = time.Duration(g.rng.Int64N(int64(g.horizon))).Truncate(time.Millisecond)
	}
	v := Duration(d)
	return &v
}

func (g *gen) pick(names []string) string { return names[g.rng.IntN(len(names))] }

// when fires a client fault at a time, or right after the client's nth
// READ or WRITE reply (or any reply), half the time each.
func (g *gen) when(f *Fault, client string) {
	if g.rng.IntN(2) == 0 {
		f.At = g.at()
		return
	}
	ops := []string{"READ", "WRITE", ""}
	f.After = &Trigger{Client: client, Op: ops[g.rng.IntN(len(ops))], Nth: 1 + g.rng.IntN(2)}
}

// pattern fills in the message pattern of a drop or delay.
func (g *gen) pattern(f *Fault) {
	f.Dir = []string{"", "request", "reply"}[g.rng.IntN(3)]
	if len(g.n.Clients) > 0 && g.rng.IntN(2) == 0 {
		f.Client = g.pick(g.n.Clients)
	}
	if servers := append(slices.Clone(g.n.Nodes), g.n.Others...); len(servers) > 0 && g.rng.IntN(2) == 0 {
		f.Node = g.pick(servers)
	}
	if g.rng.IntN(2) == 0 {
		f.At = g.at()
	}
}

// fault draws one fault of class c; each class's draw is its own method,
// and the order of draws is the schedule's (same seed, same schedule).
func (g *gen) fault(c Class) Fault {
	switch c {
	case ClassClock:
		return g.clockJumpFault()
	case ClassDrift:
		return g.driftFault()
	case ClassPause:
		return g.pauseFault()
	case ClassDrop:
		return g.dropFault()
	case ClassDelay:
		return g.delayFault()
	case ClassCrash:
		return g.crashFault()
	case ClassRestart:
		return g.restartFault()
	case ClassPartition:
		return g.partitionFault()
	}
	panic("faults: no generator for class " + string(c))
}

// clockJumpFault draws a clock jump on a host.
func (g *gen) clockJumpFault() Fault {
	// A jump matters while a lock is held, so half the time it comes
	// right after the target answered (a node) or heard back (a client).
	f := Fault{Kind: ClockJump, Target: g.pick(g.n.hosts())}
	switch {
	case slices.Contains(g.n.Clients, f.Target):
		g.when(&f, f.Target)
	case g.rng.IntN(2) == 0:
		f.After = &Trigger{Node: f.Target, Nth: 1 + g.rng.IntN(5)}
	default:
		f.At = g.at()
	}
	if g.rng.IntN(3) < 2 {
		f.Jump = g.scaled(0.1, 2)
	} else {
		f.Jump = -g.scaled(0.1, 1)
	}
	return f
}

// driftFault draws a clock drift on a host.
func (g *gen) driftFault() Fault {
	f := Fault{Kind: Drift, Target: g.pick(g.n.hosts()), PPM: 1000 + g.rng.Int64N(49_001)}
	if g.rng.IntN(2) == 0 {
		f.PPM = -f.PPM
	}
	if g.rng.IntN(2) == 0 {
		f.At = g.at() // otherwise from the start
	}
	return f
}

// pauseFault draws a client pause.
func (g *gen) pauseFault() Fault {
	f := Fault{Kind: Pause, Target: g.pick(g.n.Clients)}
	if g.rng.IntN(2) == 0 {
		f.Duration = g.scaled(0.1, 0.99)
	} else {
		f.Duration = g.scaled(1, 3)
	}
	g.when(&f, f.Target)
	return f
}

// dropFault draws dropped messages.
func (g *gen) dropFault() Fault {
	f := Fault{Kind: Drop}
	g.pattern(&f)
	if g.rng.IntN(2) == 0 {
		f.Count = 1 + g.rng.IntN(3)
	} else {
		f.Probability = float64(10+g.rng.IntN(41)) / 100
		f.Duration = g.scaled(0.5, 3)
	}
	return f
}

// delayFault draws delayed messages.
func (g *gen) delayFault() Fault {
	f := Fault{Kind: Delay}
	g.pattern(&f)
	if g.rng.IntN(2) == 0 {
		f.Duration = g.scaled(0.05, 0.5)
	} else {
		f.Duration = g.scaled(1, 2)
	}
	// Always a bounded number of messages: a network that delays a
	// share of all messages forever (and, FIFO per link, everything
	// queued behind them) makes any lock unavailable, which says
	// nothing about the lock.
	if g.rng.IntN(3) < 2 {
		f.Count = 1 + g.rng.IntN(3)
	} else {
		f.Probability = float64(5+g.rng.IntN(26)) / 100
		f.Count = 3 + g.rng.IntN(8)
	}
	return f
}

// crashFault draws a client crash.
func (g *gen) crashFault() Fault {
	f := Fault{Kind: Crash, Target: g.pick(g.n.Clients)}
	g.when(&f, f.Target)
	return f
}

// restartFault draws a node or server crash and restart.
func (g *gen) restartFault() Fault {
	f := Fault{
		Kind:         NodeCrash,
		Target:       g.pick(append(slices.Clone(g.n.Nodes), g.n.Servers...)),
		At:           g.at(),
		RestartAfter: g.scaled(0.1, 2),
		Persistence:  []string{"none", "everysec", "always"}[g.rng.IntN(3)],
	}
	if !slices.Contains(g.n.Nodes, f.Target) {
		// A ZooKeeper server logs every write before it acknowledges
		// it: there is no persistence setting to draw (the draw above
		// still happens, so Redis schedules stay what they were).
		f.Persistence = ""
	}
	return f
}

// partitionFault draws a partition of the hosts into two groups.
func (g *gen) partitionFault() Fault {
	hosts := g.n.hosts()
	perm := g.rng.Perm(len(hosts))
	split := 1 + g.rng.IntN(len(hosts)-1)
	side := make([]int, len(hosts)) // 0: first group, 1: second, 2: neither
	for i, p := range perm {
		if i >= split {
			side[p] = 1
			if i > split && g.rng.IntN(3) == 0 {
				side[p] = 2 // not every other host is cut off
			}
		}
	}
	var a, b []string
	for i, h := range hosts {
		switch side[i] {
		case 0:
			a = append(a, h)
		case 1:
			b = append(b, h)
		}
	}
	return Fault{
		Kind:     Partition,
		Groups:   [][]string{a, b},
		OneWay:   g.rng.IntN(2) == 0,
		Duration: g.scaled(0.25, 3),
		At:       g.at(),
	}
}

// ShrinkCandidates returns simpler neighbours of s, simplest first: s with
// one fault removed, then s with one fault made smaller — a duration, jump,
// drift, restart delay or time halved, a count or trigger index cut to 1, a
// host taken out of a partition group. Every candidate is strictly smaller
// than s and valid wherever s is valid. An explorer keeps the first
// candidate that still fails and shrinks again.
func ShrinkCandidates(s Schedule) []Schedule {
	var out []Schedule
	for i := range s {
		c := make(Schedule, 0, len(s)-1)
		for j := range s {
			if j != i {
				c = append(c, s[j].clone())
			}
		}
		out = append(out, c)
	}
	for i, f := range s {
		for _, g := range f.simpler() {
			c := make(Schedule, len(s))
			for j := range s {
				c[j] = s[j].clone()
			}
			c[i] = g
			out = append(out, c)
		}
	}
	return out
}

// Clone copies the schedule deeply: the copy shares no pointers or slices
// with s.
func (s Schedule) Clone() Schedule {
	if s == nil {
		return nil
	}
	out := make(Schedule, len(s))
	for i, f := range s {
		out[i] = f.clone()
	}
	return out
}

// clone copies f deeply, so a candidate never shares pointers or slices
// with the schedule it came from.
func (f Fault) clone() Fault {
	if f.At != nil {
		at := *f.At
		f.At = &at
	}
	if f.After != nil {
		tr := *f.After
		f.After = &tr
	}
	if f.Groups != nil {
		gs := make([][]string, len(f.Groups))
		for i, g := range f.Groups {
			gs[i] = slices.Clone(g)
		}
		f.Groups = gs
	}
	return f
}

// halve returns d/2 in whole milliseconds (keeping the sign), and false when
// d is too short to halve without reaching zero.
func halve(d Duration) (Duration, bool) {
	mag := time.Duration(d)
	if mag < 0 {
		mag = -mag
	}
	if mag < 2*time.Millisecond {
		return d, false
	}
	h := max((mag / 2).Truncate(time.Millisecond), time.Millisecond)
	if h >= mag {
		return d, false
	}
	if d < 0 {
		return Duration(-h), true
	}
	return Duration(h), true
}

// simpler lists single-step simplifications of f.
func (f Fault) simpler() []Fault {
	var out []Fault
	try := func(change func(g *Fault) bool) {
		g := f.clone()
		if change(&g) {
			out = append(out, g)
		}
	}
	// A duration of zero means "forever" for drops and partitions, so the
	// duration is only ever halved, never cleared.
	try(func(g *Fault) bool {
		var ok bool
		g.Duration, ok = halve(g.Duration)
		return ok && g.Duration > 0
	})
	try(func(g *Fault) bool {
		var ok bool
		g.Jump, ok = halve(g.Jump)
		return ok
	})
	try(func(g *Fault) bool {
		if g.PPM/2 == 0 {
			return false
		}
		g.PPM /= 2
		return true
	})
	try(func(g *Fault) bool {
		var ok bool
		g.RestartAfter, ok = halve(g.RestartAfter)
		return ok && g.RestartAfter > 0
	})
	try(func(g *Fault) bool {
		if g.At == nil || *g.At <= 0 {
			return false
		}
		at, ok := halve(*g.At)
		if !ok {
			at = 0
		}
		*g.At = at
		return true
	})
	try(func(g *Fault) bool {
		if g.Count <= 1 {
			return false
		}
		g.Count = 1
		return true
	})
	try(func(g *Fault) bool {
		if g.After == nil || g.After.Nth <= 1 {
			return false
		}
		g.After.Nth = 1
		return true
	})
	for i := range f.Groups {
		try(func(g *Fault) bool {
			if len(g.Groups[i]) <= 1 {
				return false
			}
			g.Groups[i] = g.Groups[i][:len(g.Groups[i])-1]
			return true
		})
	}
	return out
}
