package reports

import (
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim/event"
)

// Faults on the timeline: a partition's rows hatched with the group each is
// cut from, how long a fault lasts on the drawing, and what a fault does to
// its target's own row (a pause, a crash, a clock jump).

// partitionRows shades a partition on the rows of the hosts it separates
// (hatched, with the group it is cut from written once). It reports false
// when none of those hosts has a row here.
func (b *tlBuilder) partitionRows(a faults.Applied, until time.Duration, forever bool, title string) bool {
	t := b.t
	drawn := false
	ids := eventIDs(b.faultEvents(a, until))
	for gi, g := range a.Fault.Groups {
		var others []string
		for gj, o := range a.Fault.Groups {
			if gj != gi {
				others = append(others, o...)
			}
		}
		for _, h := range g {
			r, ok := b.rowOf[h]
			if !ok {
				r, ok = b.rowOf["node:"+h]
			}
			if !ok {
				continue
			}
			drawn = true
			s := shape{Kind: "rect", X: b.xc(a.At), Y: r.y + 1, W: b.xc(until) - b.xc(a.At), H: r.h - 2, Fill: "url(#" + t.P + "hatch-cut)", Class: "fault-window partition", Title: title,
				Label: fmt.Sprintf("fault partition %s %s %s", h, checker.Sec(a.At), checker.Sec(until)), Events: ids}
			if forever {
				s.Class += " fault-forever"
			}
			t.Back = append(t.Back, s)
			if len(g) <= len(others) || len(a.Fault.Groups) > 2 {
				txt := "cut off from " + strings.Join(others, ",")
				if _, client := b.rowOf[h]; client && !b.dense && textWidth(txt, 10) < t.X0-12 {
					// Under the client's name, clear of the plot's labels.
					t.Over = append(t.Over, shape{Kind: "text", X: 8, Y: r.y + r.h - 6, Text: txt, Size: 10, Fill: faultAmber})
				} else {
					t.Back = append(t.Back, shape{Kind: "text", X: b.xc(until) - 4, Y: r.y + r.h - 4, Text: txt, Size: 10, Fill: faultAmber, Anchor: "end", Halo: true})
				}
			}
		}
	}
	return drawn
}

// faultEvents are the events a fault's band is drawn from: its
// fault.applied, then what ended it at until (its own fault.healed, or a
// heal fault applied then), when something did.
func (b *tlBuilder) faultEvents(a faults.Applied, until time.Duration) []int {
	var ids []int
	for i, e := range b.res.Events {
		switch {
		case len(ids) == 0 && e.Kind == event.FaultApplied && e.At == a.At && e.Fault == a.Text:
			ids = append(ids, i)
		case len(ids) == 1 && e.At == until && until > a.At &&
			(e.Kind == event.FaultHealed && e.Fault == a.Text || e.Kind == event.FaultApplied && strings.HasPrefix(e.Fault, "heal")):
			return append(ids, i)
		}
	}
	return ids
}

// faultExtent is how long a fault lasts on the drawing: its own end, or
// for a partition with none the next heal, and for a partition, a node
// crash or a hang that never ends, the end of the run (forever is then
// true). Instantaneous faults (a clock jump, a failover, a rule that drops
// the first matching message) return at.
func faultExtent(a faults.Applied, all []faults.Applied, end time.Duration) (until time.Duration, forever bool) {
	if a.Until > a.At {
		return a.Until, false
	}
	switch a.Fault.Kind {
	case faults.Partition:
		for _, h := range all {
			if h.Fault.Kind == faults.Heal && h.At >= a.At {
				return h.At, false
			}
		}
		return max(end, a.At), true
	case faults.NodeCrash, faults.Hang:
		return max(end, a.At), true
	}
	return a.At, false
}

func faultTitle(a faults.Applied) string {
	s := "fault: " + a.Text + " — applied at " + checker.Sec(a.At)
	if a.Until > a.At {
		s += ", until " + checker.Sec(a.Until)
	}
	if a.Fault.Note != "" {
		s += " — " + a.Fault.Note
	}
	return s
}

// faultOnRow draws what a fault does to its target's own row; the band
// names the fault's events and says which fault it is (data-label
// "faultrow KIND TARGET FROM").
func (b *tlBuilder) faultOnRow(a faults.Applied) {
	t := b.t
	f := a.Fault
	label := fmt.Sprintf("faultrow %s %s %s", f.Kind, f.Target, checker.Sec(a.At))
	switch f.Kind {
	case faults.Pause:
		r, ok := b.rowOf[f.Target]
		if !ok {
			return
		}
		t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 2, W: b.x(a.Until) - b.x(a.At), H: r.h - 4, Class: "paused", Fill: "url(#" + t.P + "hatch-pause)", Title: faultTitle(a),
			Events: eventIDs(b.faultEvents(a, a.Until)), Label: label})
		if !b.dense {
			x := b.xc(a.At) + 4
			t.Plot = append(t.Plot, shape{Kind: "text", X: x, Y: r.y + 12, Text: fmt.Sprintf("%s paused (%s)", f.Target, dur(a.Until-a.At)), Size: 10.5, Fill: faultAmber, Weight: "700"})
			if a.Until <= b.to {
				wx, anchor := b.x(a.Until)+3, "start"
				if wx+boldWidth("wakes up", 10.5) > t.X1 {
					wx, anchor = b.x(a.Until)-3, "end"
				}
				t.Plot = append(t.Plot, shape{Kind: "text", X: wx, Y: r.y + 12, Text: "wakes up", Size: 10.5, Fill: faultAmber, Weight: "700", Anchor: anchor})
			}
		}
	case faults.Crash:
		r, ok := b.rowOf[f.Target]
		if !ok {
			return
		}
		end := b.res.End
		t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 2, W: b.x(end) - b.x(a.At), H: r.h - 4, Class: "dead", Fill: "url(#" + t.P + "hatch-pause)", Title: f.Target + " crashed at " + checker.Sec(a.At),
			Events: eventIDs(b.faultEvents(a, end)), Label: label})
		b.cross(b.x(a.At), r.y+r.h/2, 7, witnessRed, f.Target+" crashes at "+checker.Sec(a.At))
		if !b.dense {
			t.Plot = append(t.Plot, shape{Kind: "text", X: b.x(a.At) + 10, Y: r.y + 12, Text: f.Target + " crashes", Size: 10.5, Fill: witnessRed, Weight: "700"})
		}
	case faults.NodeCrash:
		r, ok := b.rowOf["node:"+f.Target]
		if !ok {
			return
		}
		until := a.Until
		if until <= a.At {
			until = b.res.End
		}
		t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 8, W: b.x(until) - b.x(a.At), H: r.h - 16, Fill: "#334155", Opacity: 0.85, Class: "node-down", Title: faultTitle(a),
			Events: eventIDs(b.faultEvents(a, until)), Label: label})
		if b.x(until)-b.xc(a.At) > 60 {
			t.Plot = append(t.Plot, shape{Kind: "text", X: b.xc(a.At) + 4, Y: r.y + r.h/2 + 4, Text: f.Target + " down", Size: 10.5, Fill: "#ffffff", Weight: "700"})
		}
		if a.Until > a.At {
			t.Plot = append(t.Plot, shape{Kind: "text", X: b.x(a.Until) + 4, Y: r.y + r.h/2 + 4, Text: "restarts (persistence " + orNone(f.Persistence) + ")", Size: 10.5, Fill: "#334155", Weight: "700"})
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (b *tlBuilder) cross(x, y, r float64, color, title string) {
	d := "M" + coord(x-r) + " " + coord(y-r) + "L" + coord(x+r) + " " + coord(y+r) + "M" + coord(x-r) + " " + coord(y+r) + "L" + coord(x+r) + " " + coord(y-r)
	b.t.Plot = append(b.t.Plot, shape{Kind: "path", D: d, Stroke: color, SW: 2.5, Fill: "none", Title: title})
}
