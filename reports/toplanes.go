package reports

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
)

// The lanes of labels above a timeline's rows: one per fault visible in
// the window (its text and extent from its events, faultspan.go), then
// one per violation the witness found (witnessevents.go).

// lane is one line of text above the rows.
type lane struct {
	text, title string
	events      string // data-events: a fault's (faultspan.go), a witness's (witnessevents.go)
	label       string // data-label: the lane's claim
	x           float64
	color       string
	weight      string
}

const maxFaultLanes = 8

// faultLanes are the visible faults' lanes, and the faults in lane order.
func (b *tlBuilder) faultLanes() ([]lane, []faults.Applied) {
	res, t := b.res, b.t
	var faultLanes []lane
	var shown []faults.Applied // the faults visible in this window, in lane order
	for _, a := range res.Applied {
		sp := b.spanOf(a)
		if !b.visible(a.At, max(sp.Until, a.At)) {
			continue
		}
		shown = append(shown, a)
		faultLanes = append(faultLanes, lane{text: faultLaneText(a, sp), title: faultTitle(a), x: b.xc(a.At), color: faultAmber, weight: "600",
			events: eventIDs(sp.ids()), label: fmt.Sprintf("faultlane %s %s %s", a.Fault.Kind, checker.Sec(a.At), checker.Sec(sp.Until))})
	}
	if len(faultLanes) > maxFaultLanes {
		more := len(faultLanes) - maxFaultLanes
		faultLanes = faultLanes[:maxFaultLanes]
		faultLanes = append(faultLanes, lane{text: fmt.Sprintf("… and %d more faults (see the fault table)", more), x: t.X0, color: faultAmber})
	}
	return faultLanes, shown
}

// witnessLanes are the lanes of the violations the witness found.
func (b *tlBuilder) witnessLanes() []lane {
	res := b.res
	var witnessLanes []lane
	w := res.Report.Witness
	if o := w.MutualExclusion; o != nil && b.visible(o.From, o.To) {
		text := fmt.Sprintf("OVERLAP: %s and %s both hold the lock from %s to %s (%s)", o.First.Client, o.Second.Client, checker.Sec(o.From), checker.Sec(o.To), dur(o.To-o.From))
		if len(o.Holders) > 0 {
			text = fmt.Sprintf("OVERLAP: %s hold %d permits of %d from %s to %s (%s)", andList(witnessClients(o)), len(o.Holders), o.Permits, checker.Sec(o.From), checker.Sec(o.To), dur(o.To-o.From))
		}
		witnessLanes = append(witnessLanes, lane{
			text:   text,
			events: eventIDs(b.overlapEvents(o)),
			x:      b.xc(o.From),
			color:  witnessRed, weight: "700",
		})
	}
	if r := w.Resource; r != nil && b.visible(r.Write.At, r.Write.At) {
		var txt string
		switch r.Kind {
		case checker.DuplicateToken:
			txt = fmt.Sprintf("DUPLICATE TOKEN: %s's write is accepted with fencing token %d, already used by %s", r.Write.Client, r.Write.FencingToken, r.Overwritten.Client)
		case checker.StaleToken:
			txt = fmt.Sprintf("STALE TOKEN: %s's write is accepted with token %d after %s's token %d", r.Write.Client, r.Write.FencingToken, r.Overwritten.Client, r.Overwritten.FencingToken)
		case checker.NotReadMinus1:
			txt = fmt.Sprintf("NOT READ-1: %s writes %d after reading %d", r.Write.Client, r.Write.Value, r.Write.Based)
		case checker.StaleBase:
			txt = fmt.Sprintf("STALE BASE: %s writes %d from %d while the resource holds %d", r.Write.Client, r.Write.Value, r.Write.Based, r.Held)
		case checker.ABA:
			txt = fmt.Sprintf("ABA: %s writes %d from a read of %d; %s wrote in between", r.Write.Client, r.Write.Value, r.Write.Based, r.Overwritten.Client)
		default:
			txt = fmt.Sprintf("LOST UPDATE: %s writes %d from a stale read of %d, undoing %s's write of %d", r.Write.Client, r.Write.Value, r.Write.Based, r.Overwritten.Client, r.Overwritten.Value)
		}
		witnessLanes = append(witnessLanes, lane{text: txt, events: eventIDs(b.resourceEvents(r)), x: b.xc(r.Write.At), color: witnessRed, weight: "700"})
	}
	if u := w.Liveness; u != nil && b.visible(u.From, u.To) {
		witnessLanes = append(witnessLanes, lane{
			text:   fmt.Sprintf("UNAVAILABLE for %s (bound %s): %s while %s wait", dur(u.To-u.From), dur(u.Bound), unavailableHolder(u), strings.Join(u.Waiting, ", ")),
			events: eventIDs(b.unavailableEvents(u)),
			x:      b.xc(u.From),
			color:  witnessRed, weight: "700",
		})
	}
	return witnessLanes
}

// placeLanes writes the lanes from y down and returns the top of each
// (where a leader to it starts) and the y below them.
func (b *tlBuilder) placeLanes(faultLanes, witnessLanes []lane, y float64) ([]float64, float64) {
	t := b.t
	laneTops := []float64{}
	for _, l := range faultLanes {
		s := b.laneText(l.x, y+12, l.text, 11.5, l.color, l.weight)
		s.Title, s.Events, s.Label = l.title, l.events, l.label
		t.Over = append(t.Over, s)
		laneTops = append(laneTops, y+14)
		y += 17
	}
	for _, l := range witnessLanes {
		s := b.laneText(l.x, y+13, l.text, 12.5, l.color, l.weight)
		s.Events, s.Label = l.events, l.label
		t.Over = append(t.Over, s)
		laneTops = append(laneTops, y+16)
		y += 19
	}
	if len(faultLanes)+len(witnessLanes) > 0 {
		y += 4
	}

	return laneTops, y
}
