// Package faults is locklab's fault vocabulary. A fault is plain data: what
// happens (Kind), to whom (Target, or a message pattern), and when — at a true
// time, or right when a matching message arrives ("after c1 receives the
// reply to SETNX"). A Schedule is a list of faults; it can be written by hand
// in a scenario file, drawn at random, shrunk, saved and replayed. Arm turns a
// schedule into events of a simulation world.
package faults

import (
	"fmt"
	"strings"
	"time"
)

// Kind names a fault.
type Kind string

const (
	Pause     Kind = "pause"      // a client host stops for Duration (GC, SIGSTOP)
	Crash     Kind = "crash"      // a client host dies
	Drop      Kind = "drop"       // matching messages are lost
	Delay     Kind = "delay"      // matching messages are delayed by Duration
	ClockJump Kind = "clock-jump" // Target's clock jumps by Jump (negative: backward)
	Drift     Kind = "drift"      // Target's clock runs at 1 + PPM/1e6
	NodeCrash Kind = "node-crash" // a Redis node stops; RestartAfter brings it back
	Partition Kind = "partition"  // messages between Groups are cut (OneWay: from Groups[0] to Groups[1] only)
	Heal      Kind = "heal"       // undo every partition
	Hang      Kind = "hang"       // a client's worker hangs (its watchdog goes on) for Duration (0: forever)
	Failover  Kind = "failover"   // Target, a replica, is promoted to master (Sentinel)
)

// Kinds lists every fault kind, for help texts and validation.
var Kinds = []Kind{Pause, Crash, Hang, Drop, Delay, ClockJump, Drift, NodeCrash, Failover, Partition, Heal}

// Trigger fires a fault when a matching message arrives at its destination,
// before the receiver acts on it. Nth picks the nth match (default 1).
type Trigger struct {
	Client string `yaml:"client,omitempty" json:"client,omitempty"`
	Node   string `yaml:"node,omitempty" json:"node,omitempty"`
	Op     string `yaml:"op,omitempty" json:"op,omitempty"`
	Dir    string `yaml:"dir,omitempty" json:"dir,omitempty"` // "reply" (default) or "request"
	Nth    int    `yaml:"nth,omitempty" json:"nth,omitempty" range:"0..1000000000"`
}

func (t *Trigger) String() string {
	var parts []string
	dir := t.Dir
	if dir == "" {
		dir = "reply"
	}
	what := dir
	if t.Op != "" {
		what = t.Op + " " + dir
	}
	parts = append(parts, what)
	if t.Client != "" {
		parts = append(parts, "of "+t.Client)
	}
	if t.Node != "" {
		parts = append(parts, "from/to "+t.Node)
	}
	s := strings.Join(parts, " ")
	if t.Nth > 1 {
		s = fmt.Sprintf("%s (#%d)", s, t.Nth)
	}
	return "on " + s
}

// Fault is one entry of a schedule. Which fields matter depends on Kind;
// Validate says what each kind needs.
type Fault struct {
	Kind Kind `yaml:"kind" json:"kind"`
	// When: At (true time) or After (a message), exactly one.
	At    *Duration `yaml:"at,omitempty" json:"at,omitempty"`
	After *Trigger  `yaml:"after,omitempty" json:"after,omitempty"`

	// Target is the client or node the fault acts on.
	Target string `yaml:"target,omitempty" json:"target,omitempty"`
	// Duration: pause length, delay added, or how long a drop/delay rule
	// stays armed (0: forever).
	Duration Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Jump is the clock jump (clock-jump).
	Jump Duration `yaml:"jump,omitempty" json:"jump,omitempty" range:"-8760h..8760h"`
	// PPM is the clock rate offset in parts per million (drift).
	PPM int64 `yaml:"ppm,omitempty" json:"ppm,omitempty" range:"-999999..1000000"`

	// Message pattern for drop and delay: Dir "request" or "reply" (both if
	// empty), Client, Node, Op (command name, READ or WRITE), Count (at most
	// this many messages, 0: unlimited) and Probability (default 1).
	Dir         string  `yaml:"dir,omitempty" json:"dir,omitempty"`
	Client      string  `yaml:"client,omitempty" json:"client,omitempty"`
	Node        string  `yaml:"node,omitempty" json:"node,omitempty"`
	Op          string  `yaml:"op,omitempty" json:"op,omitempty"`
	Count       int     `yaml:"count,omitempty" json:"count,omitempty"`
	Probability float64 `yaml:"probability,omitempty" json:"probability,omitempty"`

	// Partition groups (partition).
	Groups [][]string `yaml:"groups,omitempty" json:"groups,omitempty"`
	OneWay bool       `yaml:"one_way,omitempty" json:"one_way,omitempty"`

	// Node crash: RestartAfter (0: stays down) and Persistence ("none",
	// "everysec", "always") decide what the node remembers.
	RestartAfter Duration `yaml:"restart_after,omitempty" json:"restart_after,omitempty"`
	Persistence  string   `yaml:"persistence,omitempty" json:"persistence,omitempty"`

	// Note is free text shown in reports.
	Note string `yaml:"note,omitempty" json:"note,omitempty"`
}

// Schedule is a list of faults.
type Schedule []Fault

// String renders a fault on one line, for CLI output and traces.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(string(f.Kind))
	if f.Target != "" {
		b.WriteString(" " + f.Target)
	}
	switch f.Kind {
	case Pause:
		fmt.Fprintf(&b, " for %v", f.Duration)
	case Hang:
		if f.Duration > 0 {
			fmt.Fprintf(&b, " for %v", f.Duration)
		} else {
			b.WriteString(" for good")
		}
	case ClockJump:
		fmt.Fprintf(&b, " by %+v", time.Duration(f.Jump))
	case Drift:
		fmt.Fprintf(&b, " %+d ppm", f.PPM)
	case Drop, Delay:
		b.WriteString(" " + f.pattern())
		if f.Kind == Delay {
			fmt.Fprintf(&b, " by %v", f.Duration)
		} else if f.Duration > 0 {
			fmt.Fprintf(&b, " for %v", f.Duration)
		}
	case NodeCrash:
		if f.RestartAfter > 0 {
			fmt.Fprintf(&b, ", restart after %v (persistence %s)", f.RestartAfter, orDefault(f.Persistence, "none"))
		}
	case Partition:
		sep := " | "
		if f.OneWay {
			sep = " -> "
		}
		var gs []string
		for _, g := range f.Groups {
			gs = append(gs, strings.Join(g, ","))
		}
		b.WriteString(" " + strings.Join(gs, sep))
		if f.Duration > 0 {
			fmt.Fprintf(&b, " for %v", f.Duration)
		}
	}
	if f.At != nil {
		fmt.Fprintf(&b, " at %v", time.Duration(*f.At))
	}
	if f.After != nil {
		b.WriteString(" " + f.After.String())
	}
	return b.String()
}

func (f Fault) pattern() string {
	var parts []string
	if f.Dir != "" {
		parts = append(parts, map[string]string{"request": "requests", "reply": "replies"}[f.Dir])
	} else {
		parts = append(parts, "messages")
	}
	if f.Op != "" {
		parts = append(parts, "of "+f.Op)
	}
	if f.Client != "" {
		parts = append(parts, "for "+f.Client)
	}
	if f.Node != "" {
		parts = append(parts, "at "+f.Node)
	}
	if f.Count > 0 {
		parts = append(parts, fmt.Sprintf("(first %d)", f.Count))
	}
	if f.Probability > 0 && f.Probability < 1 {
		parts = append(parts, fmt.Sprintf("(p=%.2f)", f.Probability))
	}
	return strings.Join(parts, " ")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
