package faults

import (
	"fmt"
	"slices"
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
}

func (n Names) hosts() []string {
	return append(append(append([]string(nil), n.Clients...), n.Nodes...), n.Others...)
}

// Validate checks one fault against the names of a scenario and says which
// field is wrong and what was expected.
func (f Fault) Validate(n Names) error {
	if f.At != nil && f.After != nil {
		return fmt.Errorf("give either at or after, not both")
	}
	if f.At == nil && f.After == nil && f.Kind != Drop && f.Kind != Delay && f.Kind != Drift {
		return fmt.Errorf("at: missing; expected a true time such as 1.5s, or an after trigger")
	}
	if f.At != nil && *f.At < 0 {
		return fmt.Errorf("at: expected a time >= 0, got %v", *f.At)
	}
	if f.After != nil {
		if f.After.Client != "" && !slices.Contains(n.Clients, f.After.Client) {
			return fmt.Errorf("after.client: unknown client %q; expected one of %s", f.After.Client, strings.Join(n.Clients, ", "))
		}
		if f.After.Node != "" && !slices.Contains(n.hosts(), f.After.Node) {
			return fmt.Errorf("after.node: unknown node %q; expected one of %s", f.After.Node, strings.Join(n.hosts(), ", "))
		}
		if f.After.Dir != "" && f.After.Dir != "reply" && f.After.Dir != "request" {
			return fmt.Errorf("after.dir: expected request or reply, got %q", f.After.Dir)
		}
		if f.After.Nth < 0 {
			return fmt.Errorf("after.nth: expected a count >= 1, got %d", f.After.Nth)
		}
	}
	needTarget := func(kinds string, names []string) error {
		if f.Target == "" {
			return fmt.Errorf("target: missing; expected one of %s", strings.Join(names, ", "))
		}
		if !slices.Contains(names, f.Target) {
			return fmt.Errorf("target: unknown %s %q; expected one of %s", kinds, f.Target, strings.Join(names, ", "))
		}
		return nil
	}
	switch f.Kind {
	case Pause:
		if err := needTarget("client", n.Clients); err != nil {
			return err
		}
		if f.Duration <= 0 {
			return fmt.Errorf("duration: expected how long the pause lasts, such as 15s")
		}
	case Crash:
		return needTarget("client", n.Clients)
	case Hang:
		if err := needTarget("client", n.Clients); err != nil {
			return err
		}
		if f.Duration < 0 {
			return fmt.Errorf("duration: expected how long the worker hangs (0: for good), got %v", f.Duration)
		}
	case Failover:
		if len(n.Replicas) == 0 {
			return fmt.Errorf("target: this scenario has no replica to promote; give a node replica_of")
		}
		return needTarget("replica", n.Replicas)
	case ClockJump:
		if err := needTarget("client or node", n.hosts()); err != nil {
			return err
		}
		if f.Jump == 0 {
			return fmt.Errorf("jump: expected a non-zero clock jump such as 10s or -2s")
		}
	case Drift:
		if err := needTarget("client or node", n.hosts()); err != nil {
			return err
		}
		if f.PPM <= -1_000_000 || f.PPM > 1_000_000 {
			return fmt.Errorf("ppm: expected a rate offset in (-1000000, 1000000], got %d", f.PPM)
		}
	case Drop, Delay:
		if f.Dir != "" && f.Dir != "request" && f.Dir != "reply" {
			return fmt.Errorf("dir: expected request or reply, got %q", f.Dir)
		}
		if f.Client != "" && !slices.Contains(n.Clients, f.Client) {
			return fmt.Errorf("client: unknown client %q; expected one of %s", f.Client, strings.Join(n.Clients, ", "))
		}
		if f.Node != "" && !slices.Contains(n.hosts(), f.Node) {
			return fmt.Errorf("node: unknown node %q; expected one of %s", f.Node, strings.Join(n.hosts(), ", "))
		}
		if f.Probability < 0 || f.Probability > 1 {
			return fmt.Errorf("probability: expected a number in [0, 1], got %v", f.Probability)
		}
		if f.Count < 0 {
			return fmt.Errorf("count: expected a count >= 0, got %d", f.Count)
		}
		if f.Kind == Delay && f.Duration <= 0 {
			return fmt.Errorf("duration: expected the delay to add, such as 2s")
		}
	case NodeCrash:
		if err := needTarget("node", n.Nodes); err != nil {
			return err
		}
		switch f.Persistence {
		case "", "none", "everysec", "always":
		default:
			return fmt.Errorf("persistence: expected none, everysec or always, got %q", f.Persistence)
		}
	case Partition:
		if len(f.Groups) != 2 {
			return fmt.Errorf("groups: expected two groups of hosts, such as [[c1, A], [B, C]]")
		}
		for _, g := range f.Groups {
			if len(g) == 0 {
				return fmt.Errorf("groups: a group is empty")
			}
			for _, h := range g {
				if !slices.Contains(n.hosts(), h) {
					return fmt.Errorf("groups: unknown host %q; expected names from %s", h, strings.Join(n.hosts(), ", "))
				}
			}
		}
	case Heal:
	case "":
		return fmt.Errorf("kind: missing; expected one of %s", kindList())
	default:
		return fmt.Errorf("kind: unknown fault kind %q; expected one of %s", f.Kind, kindList())
	}
	return nil
}

func kindList() string {
	var s []string
	for _, k := range Kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

// Validate checks every fault; errors name the fault by index.
func (s Schedule) Validate(n Names) error {
	for i, f := range s {
		if err := f.Validate(n); err != nil {
			return fmt.Errorf("faults[%d] (%s): %w", i, f.Kind, err)
		}
	}
	return nil
}

// Targets are the simulated things a schedule acts on, by name.
type Targets struct {
	Clients map[string]*sim.Host
	Nodes   map[string]*sim.RedisNode
	// Hosts has every host by name (clients, nodes, others).
	Hosts map[string]*sim.Host
}

// Applied records a fault taking effect, for reports.
type Applied struct {
	At    time.Duration `json:"at_ns"`
	Until time.Duration `json:"until_ns,omitempty"`
	Fault Fault         `json:"fault"`
	Text  string        `json:"text"`
}

// Arm schedules every fault of s in w. Each fault that takes effect is
// appended to *log.
func Arm(w *sim.World, t Targets, s Schedule, log *[]Applied) {
	for i := range s {
		f := s[i]
		fire := func() { apply(w, t, f, log) }
		switch {
		case f.At != nil:
			w.At(time.Duration(*f.At), fire)
		case f.After != nil:
			armTrigger(w, f.After, fire)
		default:
			w.At(0, fire)
		}
	}
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

func apply(w *sim.World, t Targets, f Fault, log *[]Applied) {
	now := w.Now()
	rec := Applied{At: now, Fault: f, Text: f.String()}
	w.Tracef("faults", "apply %s", f.String())
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
		if err := t.Nodes[f.Target].Promote(); err != nil {
			w.Tracef("faults", "failover refused: %v", err)
		}
	case ClockJump:
		t.Hosts[f.Target].Clock.Jump(now, f.Jump.D())
	case Drift:
		t.Hosts[f.Target].Clock.SetRate(now, f.PPM)
	case Drop, Delay:
		if f.Duration > 0 && f.Kind == Drop {
			rec.Until = now + f.Duration.D()
		}
		w.Net.AddFilter(messageRule(w, f, now))
	case NodeCrash:
		n := t.Nodes[f.Target]
		n.Crash()
		if f.RestartAfter > 0 {
			rec.Until = now + f.RestartAfter.D()
			w.After(f.RestartAfter.D(), func() { n.Restart(f.Persistence) })
		}
	case Partition:
		if f.Duration > 0 {
			rec.Until = now + f.Duration.D()
		}
		cut(w, f, true)
		if f.Duration > 0 {
			w.After(f.Duration.D(), func() {
				cut(w, f, false)
				w.Tracef("faults", "heal %s", f.String())
			})
		}
	case Heal:
		w.Net.HealAll()
	}
	if log != nil {
		*log = append(*log, rec)
	}
}

func cut(w *sim.World, f Fault, on bool) {
	a, b := f.Groups[0], f.Groups[1]
	for _, x := range a {
		for _, y := range b {
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
func messageRule(w *sim.World, f Fault, armed time.Duration) sim.Filter {
	used := 0
	return func(m *sim.Message) (bool, time.Duration, string) {
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
		used++
		if f.Kind == Delay {
			return false, f.Duration.D(), "fault: " + f.String()
		}
		return true, 0, "fault: " + f.String()
	}
}
