package reports

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
)

// Faults on the timeline: a partition's rows hatched with the group each is
// cut from, how long a fault lasts on the drawing, and what a fault does to
// its target's own row (a pause, a crash, a clock jump).

// partitionRows shades a partition on the rows of the hosts it separates
// (hatched, with the group it is cut from written once). It reports false
// when none of those hosts has a row here.
func (b *tlBuilder) partitionRows(a faults.Applied, sp faultSpan, title string) bool {
	t := b.t
	drawn := false
	until, forever, ids := sp.Until, sp.Forever, eventIDs(sp.ids())
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
// "faultrow KIND TARGET FROM UNTIL"), and each text names the events it states:
// "paused (d)" the pause and its end, "wakes up" the host.resumed, a
// hang's "hangs (d)" and "continues" likewise (process.hung,
// process.continued), the
// crash's cross and words its host.crashed, "down" the node's crash,
// "restarts" its restart.
func (b *tlBuilder) faultOnRow(a faults.Applied) {
	t := b.t
	f := a.Fault
	sp := b.spanOf(a)
	ids := eventIDs(sp.ids())
	label := fmt.Sprintf("faultrow %s %s %s", f.Kind, f.Target, checker.Sec(a.At))
	switch f.Kind {
	case faults.Pause:
		r, ok := b.rowOf[f.Target]
		if !ok {
			return
		}
		t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 2, W: b.x(sp.Until) - b.x(a.At), H: r.h - 4, Class: "paused", Fill: "url(#" + t.P + "hatch-pause)", Title: faultTitle(a),
			Events: ids, Label: label + " " + checker.Sec(sp.Until)})
		if !b.dense {
			x := b.xc(a.At) + 4
			t.Plot = append(t.Plot, shape{Kind: "text", X: x, Y: r.y + 12, Text: fmt.Sprintf("%s paused (%s)", f.Target, dur(sp.Until-a.At)), Size: 10.5, Fill: faultAmber, Weight: "700",
				Events: ids, Label: fmt.Sprintf("paused %s %s %s", f.Target, checker.Sec(a.At), checker.Sec(sp.Until))})
			if sp.End >= 0 && sp.Until <= b.to {
				wx, anchor := b.x(sp.Until)+3, "start"
				if wx+boldWidth("wakes up", 10.5) > t.X1 {
					wx, anchor = b.x(sp.Until)-3, "end"
				}
				t.Plot = append(t.Plot, shape{Kind: "text", X: wx, Y: r.y + 12, Text: "wakes up", Size: 10.5, Fill: faultAmber, Weight: "700", Anchor: anchor,
					Events: eventIDs([]int{sp.End}), Label: fmt.Sprintf("wakes %s %s", f.Target, checker.Sec(sp.Until))})
			}
		}
	case faults.Hang:
		b.hangOnRow(a, sp, ids, label)
	case faults.Crash:
		r, ok := b.rowOf[f.Target]
		if !ok {
			return
		}
		end := b.res.End
		t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 2, W: b.x(end) - b.x(a.At), H: r.h - 4, Class: "dead", Fill: "url(#" + t.P + "hatch-pause)", Title: f.Target + " crashed at " + checker.Sec(a.At),
			Events: ids, Label: label + " " + checker.Sec(end)})
		crash := fmt.Sprintf("crash %s %s", f.Target, checker.Sec(a.At))
		b.cross(b.x(a.At), r.y+r.h/2, 7, witnessRed, f.Target+" crashes at "+checker.Sec(a.At))
		t.Plot[len(t.Plot)-1].Events, t.Plot[len(t.Plot)-1].Label = ids, crash
		if !b.dense {
			t.Plot = append(t.Plot, shape{Kind: "text", X: b.x(a.At) + 10, Y: r.y + 12, Text: f.Target + " crashes", Size: 10.5, Fill: witnessRed, Weight: "700", Events: ids, Label: crash})
		}
	case faults.NodeCrash:
		r, ok := b.rowOf["node:"+f.Target]
		if !ok {
			return
		}
		until := sp.Until
		t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 8, W: b.x(until) - b.x(a.At), H: r.h - 16, Fill: "#334155", Opacity: 0.85, Class: "node-down", Title: faultTitle(a),
			Events: ids, Label: label + " " + checker.Sec(until)})
		if b.x(until)-b.xc(a.At) > 60 {
			t.Plot = append(t.Plot, shape{Kind: "text", X: b.xc(a.At) + 4, Y: r.y + r.h/2 + 4, Text: f.Target + " down", Size: 10.5, Fill: "#ffffff", Weight: "700",
				Events: ids, Label: fmt.Sprintf("down %s %s %s", f.Target, checker.Sec(a.At), checker.Sec(until))})
		}
		if sp.End >= 0 {
			t.Plot = append(t.Plot, shape{Kind: "text", X: b.x(until) + 4, Y: r.y + r.h/2 + 4, Text: "restarts (persistence " + orNone(f.Persistence) + ")", Size: 10.5, Fill: "#334155", Weight: "700",
				Events: eventIDs([]int{sp.End}), Label: fmt.Sprintf("restarts %s %s", f.Target, checker.Sec(until))})
		}
	}
}

// hangOnRow draws a hang on the hung client's row as a pause is drawn:
// the band from its process.hung to its process.continued (or the run's
// end), "c1 hangs (d)" naming both, and "continues" at the
// process.continued. Its host and its watchdog go on meanwhile
// (faults/faults.go), so the band is the worker's, not the host's.
func (b *tlBuilder) hangOnRow(a faults.Applied, sp faultSpan, ids, label string) {
	t, target := b.t, a.Fault.Target
	r, ok := b.rowOf[target]
	if !ok {
		return
	}
	t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 2, W: b.x(sp.Until) - b.x(a.At), H: r.h - 4, Class: "paused hung", Fill: "url(#" + t.P + "hatch-pause)", Title: faultTitle(a) + " (the worker hangs; the process and its watchdog go on)",
		Events: ids, Label: label + " " + checker.Sec(sp.Until)})
	if b.dense {
		return
	}
	t.Plot = append(t.Plot, shape{Kind: "text", X: b.xc(a.At) + 4, Y: r.y + 12, Text: fmt.Sprintf("%s hangs (%s)", target, dur(sp.Until-a.At)), Size: 10.5, Fill: faultAmber, Weight: "700",
		Events: ids, Label: fmt.Sprintf("hung %s %s %s", target, checker.Sec(a.At), checker.Sec(sp.Until))})
	if sp.End >= 0 && sp.Until <= b.to {
		wx, anchor := b.x(sp.Until)+3, "start"
		if wx+boldWidth("continues", 10.5) > t.X1 {
			wx, anchor = b.x(sp.Until)-3, "end"
		}
		t.Plot = append(t.Plot, shape{Kind: "text", X: wx, Y: r.y + 12, Text: "continues", Size: 10.5, Fill: faultAmber, Weight: "700", Anchor: anchor,
			Events: eventIDs([]int{sp.End}), Label: fmt.Sprintf("continues %s %s", target, checker.Sec(sp.Until))})
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
