package reports

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
)

// The timeline is drawn in Go as SVG, so every report shows who held the lock
// when, the faults and the witness with no JavaScript at all. Geometry is
// computed here; the template only writes the shapes out (escaping every
// string).

// shape is one SVG element of a timeline.
type shape struct {
	Kind    string // "rect", "line", "circle", "text", "path"
	X, Y    float64
	W, H    float64
	X2, Y2  float64
	R       float64
	D       string // path data
	Class   string
	Fill    string
	Stroke  string
	SW      float64 // stroke width
	Dash    string
	Opacity float64
	Text    string
	Title   string
	Anchor  string
	Size    float64 // font size
	Weight  string
	ID      string
	Clients string // data-clients: the clients a witness element is about
	Label   string // data-label: machine-readable description for tests
	// Events: data-events, the ids of the events the element is drawn
	// from (eventIDs: positions in the run's event log).
	Events string
	Halo   bool // text with a white outline, readable over lines
}

// timeline is one SVG picture of (part of) a run.
type timeline struct {
	P       string // prefix of element ids, unique on the page
	Caption string
	Width   float64
	Height  float64
	X0, X1  float64 // plot area, horizontally
	Y0, Y1  float64 // plot area (rows), vertically
	Back    []shape // under everything, clipped to the plot
	Plot    []shape // clipped to the plot area
	Over    []shape // labels, axes: not clipped
	Legend  []legendItem
	Zoomed  bool
}

type legendItem struct {
	Swatch string // CSS class of the swatch
	Fill   string
	Text   string
}

// palette gives each client a colour; red is kept for witnesses and amber
// for faults.
var palette = []string{"#2563eb", "#059669", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#92400e", "#475569", "#4f46e5", "#0d9488"}

const (
	witnessRed = "#dc2626"
	faultAmber = "#b45309"
)

func clientColor(i int) string { return palette[i%len(palette)] }

type tlBuilder struct {
	res      *scenarios.Result
	t        *timeline
	from, to time.Duration
	dense    bool
	huge     bool // more than 40 clients: no mechanism lanes (see mechRows)
	color    map[string]string
	rowOf    map[string]row
	mech     *mechanism

	voteClients, sessionClients []string
	backends                    []*backendLine // database backends drawn (backends.go)
}

// rowSpec is one row of a timeline before it is laid out.
type rowSpec struct {
	name, sub, kind string
	h               float64
	// subTitle and subEvents: a server row subtitle's tooltip and the
	// events it is derived from (hostSubtitle).
	subTitle, subEvents string
}

type row struct{ y, h float64 }

// buildTimeline draws res over true time [from, to].
func buildTimeline(res *scenarios.Result, prefix string, from, to time.Duration, zoomed bool) *timeline {
	return buildTimelineMech(res, deriveMechanism(res), prefix, from, to, zoomed)
}

// buildTimelineMech is buildTimeline with the mechanism already derived
// (nil draws no mechanism lanes).
func buildTimelineMech(res *scenarios.Result, mech *mechanism, prefix string, from, to time.Duration, zoomed bool) *timeline {
	if to <= from {
		to = from + time.Second
	}
	const width = 1200.0
	t := &timeline{P: prefix, Width: width, X0: 150, X1: width - 30, Zoomed: zoomed}
	b := &tlBuilder{res: res, t: t, from: from, to: to, color: map[string]string{}, rowOf: map[string]row{}, mech: mech}
	clients := res.Scenario.ClientNames()
	b.dense = len(clients) > 12
	b.huge = len(clients) > 40
	for i, c := range clients {
		b.color[c] = clientColor(i)
	}
	b.layout(clients)
	settleLabels(t)
	return t
}

func (b *tlBuilder) x(d time.Duration) float64 {
	return b.t.X0 + float64(d-b.from)/float64(b.to-b.from)*(b.t.X1-b.t.X0)
}

// xc is x clamped to the plot area.
func (b *tlBuilder) xc(d time.Duration) float64 {
	return math.Max(b.t.X0, math.Min(b.t.X1, b.x(d)))
}

func (b *tlBuilder) visible(from, to time.Duration) bool { return to >= b.from && from <= b.to }

func textWidth(s string, size float64) float64 { return float64(len([]rune(s))) * size * 0.56 }

func boldWidth(s string, size float64) float64 { return float64(len([]rune(s))) * size * 0.62 }

// label places a text of one line at x in a lane, keeping it inside the plot.
func (b *tlBuilder) laneText(x, y float64, s string, size float64, fill, weight string) shape {
	w := textWidth(s, size)
	if weight != "" {
		w = boldWidth(s, size)
	}
	anchor := "start"
	if x+w > b.t.Width-6 {
		x = math.Max(6, b.t.Width-6-w)
	}
	return shape{Kind: "text", X: x, Y: y, Text: s, Size: size, Fill: fill, Anchor: anchor, Weight: weight, Halo: true}
}

func (b *tlBuilder) layout(clients []string) {
	res, t := b.res, b.t
	y := 10.0

	// Lanes of labels above the rows: faults, then the witness.
	type lane struct {
		text, title string
		x           float64
		color       string
		weight      string
	}
	var faultLanes []lane
	var shown []faults.Applied // the faults visible in this window, in lane order
	for _, a := range res.Applied {
		until, forever := faultExtent(a, res.Applied, res.End)
		if !b.visible(a.At, max(until, a.At)) {
			continue
		}
		shown = append(shown, a)
		txt := a.Text
		if forever {
			txt = fmt.Sprintf("%s  (%s → end of run, never heals)", txt, checker.Sec(a.At))
		} else if until > a.At {
			txt = fmt.Sprintf("%s  (%s → %s)", txt, checker.Sec(a.At), checker.Sec(until))
		} else {
			txt = fmt.Sprintf("%s  (at %s)", txt, checker.Sec(a.At))
		}
		faultLanes = append(faultLanes, lane{text: "fault: " + txt, title: faultTitle(a), x: b.xc(a.At), color: faultAmber, weight: "600"})
	}
	const maxFaultLanes = 8
	if len(faultLanes) > maxFaultLanes {
		more := len(faultLanes) - maxFaultLanes
		faultLanes = faultLanes[:maxFaultLanes]
		faultLanes = append(faultLanes, lane{text: fmt.Sprintf("… and %d more faults (see the fault table)", more), x: t.X0, color: faultAmber})
	}
	var witnessLanes []lane
	w := res.Report.Witness
	if o := w.MutualExclusion; o != nil && b.visible(o.From, o.To) {
		text := fmt.Sprintf("OVERLAP: %s and %s both hold the lock from %s to %s (%s)", o.First.Client, o.Second.Client, checker.Sec(o.From), checker.Sec(o.To), dur(o.To-o.From))
		if len(o.Holders) > 0 {
			text = fmt.Sprintf("OVERLAP: %s hold %d permits of %d from %s to %s (%s)", andList(witnessClients(o)), len(o.Holders), o.Permits, checker.Sec(o.From), checker.Sec(o.To), dur(o.To-o.From))
		}
		witnessLanes = append(witnessLanes, lane{
			text:  text,
			x:     b.xc(o.From),
			color: witnessRed, weight: "700",
		})
	}
	if r := w.Resource; r != nil && b.visible(r.Write.At, r.Write.At) {
		var txt string
		switch r.Kind {
		case checker.DuplicateToken:
			txt = fmt.Sprintf("DUPLICATE TOKEN: %s's write is accepted with fencing token %d, already used by %s", r.Write.Client, r.Write.Fence, r.Overwritten.Client)
		case checker.StaleToken:
			txt = fmt.Sprintf("STALE TOKEN: %s's write is accepted with token %d after %s's token %d", r.Write.Client, r.Write.Fence, r.Overwritten.Client, r.Overwritten.Fence)
		case checker.NotReadMinus1:
			txt = fmt.Sprintf("NOT READ-1: %s writes %d after reading %d", r.Write.Client, r.Write.Value, r.Write.Based)
		case checker.StaleBase:
			txt = fmt.Sprintf("STALE BASE: %s writes %d from %d while the resource holds %d", r.Write.Client, r.Write.Value, r.Write.Based, r.Held)
		case checker.ABA:
			txt = fmt.Sprintf("ABA: %s writes %d from a read of %d; %s wrote in between", r.Write.Client, r.Write.Value, r.Write.Based, r.Overwritten.Client)
		default:
			txt = fmt.Sprintf("LOST UPDATE: %s writes %d from a stale read of %d, undoing %s's write of %d", r.Write.Client, r.Write.Value, r.Write.Based, r.Overwritten.Client, r.Overwritten.Value)
		}
		witnessLanes = append(witnessLanes, lane{text: txt, x: b.xc(r.Write.At), color: witnessRed, weight: "700"})
	}
	if u := w.Liveness; u != nil && b.visible(u.From, u.To) {
		witnessLanes = append(witnessLanes, lane{
			text:  fmt.Sprintf("UNAVAILABLE for %s (bound %s): %s while %s wait", dur(u.To-u.From), dur(u.Bound), unavailableHolder(u), strings.Join(u.Waiting, ", ")),
			x:     b.xc(u.From),
			color: witnessRed, weight: "700",
		})
	}
	laneTops := []float64{}
	for _, l := range faultLanes {
		s := b.laneText(l.x, y+12, l.text, 11.5, l.color, l.weight)
		s.Title = l.title
		t.Over = append(t.Over, s)
		laneTops = append(laneTops, y+14)
		y += 17
	}
	for _, l := range witnessLanes {
		t.Over = append(t.Over, b.laneText(l.x, y+13, l.text, 12.5, l.color, l.weight))
		laneTops = append(laneTops, y+16)
		y += 19
	}
	if len(faultLanes)+len(witnessLanes) > 0 {
		y += 4
	}

	// Time axis on top.
	axisTop := y
	y += 22
	t.Y0 = y

	// Rows.
	var specs []rowSpec
	rowH := 58.0
	if b.dense {
		rowH = 22
	}
	for _, c := range clients {
		specs = append(specs, rowSpec{name: c, sub: "client", kind: "client", h: rowH})
	}
	specs = append(specs, b.mechRows(clients)...)
	clientHosts := map[string]scenarios.Host{}
	for _, h := range res.Hosts {
		switch {
		case h.Role == "client":
			clientHosts[h.Name] = h
		case h.Name == scenarios.ResourceHost || h.Role == "resource":
			specs = append(specs, rowSpec{name: h.Name, sub: "protected resource", kind: "store", h: 46})
		default:
			sub, title, ids := hostSubtitle(h, res.Events)
			specs = append(specs, rowSpec{name: h.Name, sub: sub, subTitle: title, subEvents: eventIDs(ids), kind: "node", h: b.nodeRowHeight(h.Name, trivialClock(h))})
		}
	}
	for _, c := range clients {
		if h, ok := clientHosts[c]; ok && !trivialClock(h) {
			specs = append(specs, rowSpec{name: c, sub: "clock of " + c, kind: "clientclock", h: 40})
		}
	}
	clientRowsEnd := y
	for i, s := range specs {
		r := row{y: y, h: s.h}
		if s.kind == "client" {
			b.rowOf[s.name] = r
			clientRowsEnd = y + s.h
		} else {
			b.rowOf[s.kind+":"+s.name] = r
		}
		// Rows are striped: the picture's white background shows through
		// the even rows, the odd ones get a .row-bg from the style sheet.
		if i%2 == 1 {
			t.Back = append(t.Back, shape{Kind: "rect", X: 0, Y: y, W: t.Width, H: s.h, Class: "row-bg"})
		}
		nameFill := "#0f172a"
		if s.kind == "client" {
			nameFill = b.color[s.name]
			t.Over = append(t.Over, shape{Kind: "rect", X: 8, Y: y + s.h/2 - 6, W: 12, H: 12, Fill: b.color[s.name]})
		}
		size := 14.0
		if b.dense {
			size = 11
		}
		if s.kind == "client" {
			t.Over = append(t.Over, shape{Kind: "text", X: 26, Y: y + s.h/2 + (size/2 - 2), Text: s.name, Size: size, Weight: "700", Fill: nameFill, Class: "row-label"})
		} else {
			ly := y + s.h/2 - 2
			if s.h > 48 || s.kind == "node" && s.h != 40 {
				ly = y + 15 // tall rows and key lanes: the name at the top
			}
			t.Over = append(t.Over, shape{Kind: "text", X: 8, Y: ly, Text: s.name, Size: 12.5, Weight: "700", Fill: nameFill, Class: "row-label"})
			sub := shape{Kind: "text", X: 8, Y: ly + 12, Text: s.sub, Size: 10, Fill: "#64748b", Title: s.subTitle, Events: s.subEvents}
			if s.kind == "node" {
				sub.Label = "subtitle " + s.name + " " + s.sub
			}
			t.Over = append(t.Over, sub)
		}
		if i > 0 && s.kind != "client" && specs[i-1].kind == "client" {
			t.Over = append(t.Over, shape{Kind: "line", X: 0, Y: y, X2: t.Width, Y2: y, Stroke: "#94a3b8", SW: 1.2})
		}
		y += s.h
	}
	t.Y1 = y
	t.Over = append(t.Over, shape{Kind: "line", X: t.X0 - 4, Y: t.Y0, X2: t.X0 - 4, Y2: t.Y1, Stroke: "#cbd5e1", SW: 1})

	// Axis ticks and grid lines.
	b.axis(axisTop, y)
	y += 24
	t.Height = y

	// Fault windows, shaded across all rows, with a leader to their label.
	for i, a := range shown {
		title := faultTitle(a)
		if until, forever := faultExtent(a, res.Applied, res.End); until > a.At && a.Fault.Kind == faults.Partition && len(a.Fault.Groups) > 0 && b.partitionRows(a, until, forever, title) {
			// A partition is drawn on the rows it cuts off, not across
			// the whole picture.
		} else if until > a.At {
			s := shape{Kind: "rect", X: b.xc(a.At), Y: t.Y0, W: b.xc(until) - b.xc(a.At), H: t.Y1 - t.Y0, Fill: "#fde68a", Opacity: 0.35, Class: "fault-window", Title: title,
				Label: fmt.Sprintf("fault %s %s %s", a.Fault.Kind, checker.Sec(a.At), checker.Sec(until))}
			if forever {
				s.Class += " fault-forever"
				s.Stroke, s.SW, s.Dash = faultAmber, 1, "6 4"
			}
			t.Back = append(t.Back, s)
		}
		t.Plot = append(t.Plot, shape{Kind: "line", X: b.x(a.At), Y: t.Y0, X2: b.x(a.At), Y2: t.Y1, Stroke: faultAmber, SW: 1.2, Dash: "4 3", Class: "fault-start"})
		if i < maxFaultLanes {
			t.Back = append(t.Back, shape{Kind: "line", X: b.xc(a.At), Y: laneTops[i], X2: b.xc(a.At), Y2: t.Y0, Stroke: faultAmber, SW: 0.8, Dash: "2 2"})
		}
		b.faultOnRow(a)
	}
	_ = clientRowsEnd

	// Clients: wants, holding intervals, accesses.
	h := res.History
	for _, wt := range h.Wants {
		b.want(wt)
	}
	for _, iv := range h.Intervals {
		b.interval(iv)
	}
	b.accesses(h.Accesses)

	// Hosts: clocks.
	for _, hs := range res.Hosts {
		key := "node:" + hs.Name
		if hs.Role == "client" {
			key = "clientclock:" + hs.Name
		}
		if r, ok := b.rowOf[key]; ok {
			b.clock(hs, r)
		}
	}

	// The mechanism: keys, votes, replication, sessions, znodes.
	b.drawMechanism()

	// The witness, on top of everything.
	b.witness(clientRowsEnd, laneTops[len(faultLanes):])
	b.dropCollidingLabels()

	// Legend.
	t.Legend = []legendItem{
		{Swatch: "sw-hold", Fill: palette[0], Text: "hold: from the acquire's return until the client releases, crashes, learns it lost the lock or finds its own lease run out — a deadline it never checks does not end it (one colour per client)"},
		{Swatch: "sw-want", Text: "wants the lock and waits"},
		{Swatch: "sw-fault", Text: "fault window"},
		{Swatch: "sw-pause", Text: "client paused / host down"},
		{Swatch: "sw-witness", Text: "violation witness"},
		{Swatch: "sw-read", Text: "read of the resource"},
		{Swatch: "sw-write", Text: "accepted write"},
		{Swatch: "sw-reject", Text: "rejected write"},
	}
	t.Legend = append(t.Legend, b.mechLegend()...)
}

func (b *tlBuilder) axis(top, bottom float64) {
	t := b.t
	span := (b.to - b.from).Seconds()
	step := niceStep(span / 10)
	decimals := 0
	if step < 1 {
		decimals = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	first := math.Ceil(b.from.Seconds()/step-1e-9) * step
	for v := first; v <= b.to.Seconds()+1e-9; v += step {
		x := b.x(time.Duration(v * float64(time.Second)))
		if math.Abs(v) < step/1e6 {
			v = 0
		}
		label := fmt.Sprintf("%.*fs", decimals, v)
		t.Back = append(t.Back, shape{Kind: "line", X: x, Y: t.Y0, X2: x, Y2: t.Y1, Stroke: "#e2e8f0", SW: 1, Class: "grid"})
		t.Over = append(t.Over, shape{Kind: "text", X: x, Y: top + 15, Text: label, Size: 11, Anchor: "middle", Class: "tick"})
		if end := b.x(b.res.End); b.res.End >= b.to || math.Abs(x-end) > 28 {
			t.Over = append(t.Over, shape{Kind: "text", X: x, Y: bottom + 16, Text: label, Size: 11, Anchor: "middle", Class: "tick"})
		}
	}
	if end := b.res.End; end >= b.from && end < b.to {
		x := b.x(end)
		t.Over = append(t.Over, shape{Kind: "line", X: x, Y: t.Y0, X2: x, Y2: t.Y1, Stroke: "#0f172a", SW: 1.5, Class: "end-of-run"})
		t.Over = append(t.Over, shape{Kind: "text", X: x, Y: bottom + 16, Text: "end", Size: 11, Fill: "#0f172a", Anchor: "middle", Weight: "700"})
	}
	t.Over = append(t.Over, shape{Kind: "text", X: 8, Y: top + 15, Text: "true time →", Size: 11, Fill: "#475569", Weight: "600"})
	t.Over = append(t.Over, shape{Kind: "line", X: t.X0, Y: t.Y0, X2: t.X1, Y2: t.Y0, Stroke: "#94a3b8", SW: 1})
	t.Over = append(t.Over, shape{Kind: "line", X: t.X0, Y: t.Y1, X2: t.X1, Y2: t.Y1, Stroke: "#94a3b8", SW: 1})
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// partitionRows shades a partition on the rows of the hosts it separates
// (hatched, with the group it is cut from written once). It reports false
// when none of those hosts has a row here.
func (b *tlBuilder) partitionRows(a faults.Applied, until time.Duration, forever bool, title string) bool {
	t := b.t
	drawn := false
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
				Label: fmt.Sprintf("fault partition %s %s %s", h, checker.Sec(a.At), checker.Sec(until))}
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

// faultOnRow draws what a fault does to its target's own row.
func (b *tlBuilder) faultOnRow(a faults.Applied) {
	t := b.t
	f := a.Fault
	switch f.Kind {
	case faults.Pause:
		r, ok := b.rowOf[f.Target]
		if !ok {
			return
		}
		t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 2, W: b.x(a.Until) - b.x(a.At), H: r.h - 4, Class: "paused", Fill: "url(#" + t.P + "hatch-pause)", Title: faultTitle(a)})
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
		t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 2, W: b.x(end) - b.x(a.At), H: r.h - 4, Class: "dead", Fill: "url(#" + t.P + "hatch-pause)", Title: f.Target + " crashed at " + checker.Sec(a.At)})
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
		t.Plot = append(t.Plot, shape{Kind: "rect", X: b.x(a.At), Y: r.y + 8, W: b.x(until) - b.x(a.At), H: r.h - 16, Fill: "#334155", Opacity: 0.85, Class: "node-down", Title: faultTitle(a)})
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

func (b *tlBuilder) barGeom(r row) (y, h float64) {
	if b.dense {
		return r.y + 4, r.h - 8
	}
	return r.y + 16, 20
}

func (b *tlBuilder) want(wt checker.Want) {
	r, ok := b.rowOf[wt.Client]
	if !ok || wt.To <= wt.From || !b.visible(wt.From, wt.To) {
		return
	}
	by, bh := b.barGeom(r)
	cy := by + bh/2
	x0, x1 := b.x(wt.From), b.x(wt.To)
	title := fmt.Sprintf("%s wants the lock and waits: %s → %s (%s, %s)", wt.Client, checker.Sec(wt.From), checker.Sec(wt.To), dur(wt.To-wt.From), wt.Outcome)
	b.t.Plot = append(b.t.Plot, shape{Kind: "rect", X: x0, Y: cy - 3, W: x1 - x0, H: 6, Fill: "url(#" + b.t.P + "hatch-want)", Class: "want", Title: title})
	if !b.dense && x1-x0 > 70 {
		b.t.Plot = append(b.t.Plot, shape{Kind: "text", X: math.Max(x0, b.t.X0) + 3, Y: cy - 6, Text: "waits", Size: 10, Fill: "#64748b"})
	}
}

func endPhrase(reason string) string {
	switch reason {
	case "release":
		return "releases"
	case "validity":
		return "checks its lease, finds it run out"
	case "crash":
		return "crashes"
	case "lost":
		return "learns it lost the lock"
	case "end of run":
		return "still holding at the end"
	}
	return reason
}

func (b *tlBuilder) isWitnessInterval(iv checker.Interval) bool {
	o := b.res.Report.Witness.MutualExclusion
	return o != nil && (iv == o.First || iv == o.Second || slices.Contains(o.Holders, iv))
}

// witnessClients are the holders a mutual-exclusion witness names: the
// two of a mutex or a reader-writer lock, or the permits+1 of a
// semaphore.
func witnessClients(o *checker.Overlap) []string {
	if len(o.Holders) == 0 {
		return []string{o.First.Client, o.Second.Client}
	}
	var out []string
	for _, h := range o.Holders {
		if !slices.Contains(out, h.Client) {
			out = append(out, h.Client)
		}
	}
	return out
}

// holdVerb is what a hold is called on its bar: a reader reads, a writer
// writes (a reader-writer lock's holds carry their mode); anyone else
// holds.
func holdVerb(iv checker.Interval) string {
	switch iv.Mode {
	case checker.ModeRead:
		return "reads"
	case checker.ModeWrite:
		return "writes"
	}
	return "holds"
}

// modeNoun names the holder of a reader-writer lock's mode: a read hold's
// is a reader, a write hold's a writer.
func modeNoun(mode string) string {
	switch mode {
	case checker.ModeRead:
		return "reader"
	case checker.ModeWrite:
		return "writer"
	}
	return mode + " holder"
}

func (b *tlBuilder) interval(iv checker.Interval) {
	r, ok := b.rowOf[iv.Client]
	if !ok || !b.visible(iv.Start, iv.End) {
		return
	}
	by, bh := b.barGeom(r)
	x0, x1 := b.x(iv.Start), b.x(iv.End)
	w := math.Max(x1-x0, 2)
	title := fmt.Sprintf("%s holds the lock %s → %s (%s); ends: %s", iv.Client, checker.Sec(iv.Start), checker.Sec(iv.End), dur(iv.End-iv.Start), iv.EndReason)
	if iv.Mode != "" {
		title = fmt.Sprintf("%s holds the lock as a %s %s → %s (%s); ends: %s", iv.Client, modeNoun(iv.Mode), checker.Sec(iv.Start), checker.Sec(iv.End), dur(iv.End-iv.Start), iv.EndReason)
	}
	if iv.Token != "" {
		title += "; token " + iv.Token
	}
	if iv.Fence != 0 {
		title += fmt.Sprintf("; fencing token %d", iv.Fence)
	}
	s := shape{Kind: "rect", X: x0, Y: by, W: w, H: bh, Fill: b.color[iv.Client], Class: "hold", Title: title}
	if iv.Mode == checker.ModeRead {
		// A reader's bar is lighter: readers may share the lock.
		s.Opacity, s.Class = 0.6, "hold hold-read"
	}
	if b.isWitnessInterval(iv) {
		s.Stroke, s.SW, s.Class = witnessRed, 3, "hold witness-hold"
	}
	b.t.Plot = append(b.t.Plot, s)
	if b.dense {
		return
	}
	// Label inside the bar when it fits, the end reason after it.
	vis0, vis1 := math.Max(x0, b.t.X0), math.Min(x0+w, b.t.X1)
	label := iv.Client + " " + holdVerb(iv)
	if iv.Fence != 0 {
		label += fmt.Sprintf(" (token %d)", iv.Fence)
	}
	if boldWidth(label, 11)+10 < vis1-vis0 {
		b.t.Plot = append(b.t.Plot, shape{Kind: "text", X: vis0 + 5, Y: by + bh/2 + 4, Text: label, Size: 11, Fill: "#ffffff", Weight: "700"})
		end := endPhrase(iv.EndReason)
		if boldWidth(label, 11)+textWidth("· "+end, 10)+24 < vis1-vis0 {
			b.t.Plot = append(b.t.Plot, shape{Kind: "text", X: vis1 - 5, Y: by + bh/2 + 4, Text: "· " + end, Size: 10, Fill: "#ffffff", Anchor: "end"})
		}
	}
	if iv.EndReason == "validity" {
		b.t.Plot = append(b.t.Plot, shape{Kind: "line", X: x0 + w, Y: by - 4, X2: x0 + w, Y2: by + bh + 4, Stroke: "#0f172a", SW: 1.5, Dash: "2 2", Title: iv.Client + "'s lease runs out on its own clock at " + checker.Sec(iv.End)})
	}
}

// accessMark is one access drawn on a row, waiting for its label.
type accessMark struct {
	x     float64
	short string
}

func (b *tlBuilder) accesses(acc []checker.Access) {
	t := b.t
	store, hasStore := b.rowOf["store:"+scenarios.ResourceHost]
	byRow := map[string][]accessMark{}
	var rowOrder []string
	addMark := func(key string, m accessMark) {
		if _, ok := byRow[key]; !ok {
			rowOrder = append(rowOrder, key)
		}
		byRow[key] = append(byRow[key], m)
	}
	for _, a := range acc {
		if a.At < b.from || a.At > b.to {
			continue
		}
		x := b.x(a.At)
		var title, short string
		switch {
		case a.Kind == "read":
			title = fmt.Sprintf("%s reads %d at %s", a.Client, a.Value, checker.Sec(a.At))
			short = fmt.Sprintf("read %d", a.Value)
		case a.Accepted:
			title = fmt.Sprintf("%s writes %d (based on a read of %d) at %s", a.Client, a.Value, a.Based, checker.Sec(a.At))
			short = fmt.Sprintf("write %d", a.Value)
		default:
			title = fmt.Sprintf("%s's write of %d is rejected at %s: %s", a.Client, a.Value, checker.Sec(a.At), a.Reason)
			short = "write rejected"
		}
		if a.Fence != 0 {
			title += fmt.Sprintf(" (fencing token %d)", a.Fence)
		}
		if r, ok := b.rowOf[a.Client]; ok {
			b.marker(a, x, b.accessY(r), title)
			addMark(a.Client, accessMark{x, short})
		}
		if hasStore && a.Kind == "write" {
			// The store lane repeats the client row's marker; its tooltip is
			// only written once, on the client row, when there is one.
			storeTitle := title
			if _, ok := b.rowOf[a.Client]; ok {
				storeTitle = ""
			}
			b.marker(a, x, store.y+store.h/2-4, storeTitle)
			txt := fmt.Sprintf("%d by %s", a.Value, a.Client)
			if !a.Accepted {
				txt = "rejects " + a.Client
			}
			if fl := fenceLabel(a); fl != "" {
				txt += ": " + fl
			}
			addMark("store:"+scenarios.ResourceHost, accessMark{x, txt})
		}
	}
	if b.dense {
		return
	}
	// Labels: markers closer than a few pixels share one label, placed after
	// the last of them; a label that would run into the next one is dropped
	// (every marker keeps its tooltip).
	for _, key := range rowOrder {
		marks := byRow[key]
		r := b.rowOf[key]
		y := b.accessY(r) + 4
		if key == "store:"+scenarios.ResourceHost {
			y = r.y + r.h/2
		}
		lastEnd := -1e9
		for i := 0; i < len(marks); {
			j := i
			texts := []string{marks[i].short}
			for j+1 < len(marks) && marks[j+1].x-marks[j].x < 12 {
				j++
				texts = append(texts, marks[j].short)
			}
			label := strings.Join(texts, ", ")
			w := textWidth(label, 10)
			x, anchor := marks[j].x+8, "start"
			start, end := x, x+w
			next := 1e9
			if j+1 < len(marks) {
				next = marks[j+1].x - 6
			}
			if end > t.X1-2 && j+1 == len(marks) {
				// No room on the right: put the label before the markers.
				x, anchor = marks[i].x-8, "end"
				start, end = x-w, x
			}
			if start > lastEnd && start > t.X0 && marks[i].x-6 > lastEnd && end < next && end < t.X1-2 {
				t.Plot = append(t.Plot, shape{Kind: "text", X: x, Y: y, Text: label, Size: 10, Fill: "#334155", Anchor: anchor})
				lastEnd = max(end, marks[j].x+6)
			}
			i = j + 1
		}
	}
	if hasStore {
		t.Plot = append(t.Plot, shape{Kind: "text", X: t.X0 + 4, Y: store.y + 11, Text: fmt.Sprintf("stock starts at %d", b.res.History.Initial), Size: 10, Fill: "#64748b"})
	}
}

// accessY is where access markers sit in a client row: under the bar.
func (b *tlBuilder) accessY(r row) float64 {
	by, bh := b.barGeom(r)
	if b.dense {
		return by + bh/2
	}
	return by + bh + 10
}

func (b *tlBuilder) marker(a checker.Access, x, y float64, title string) {
	t := b.t
	switch {
	case a.Kind == "read":
		t.Plot = append(t.Plot, shape{Kind: "circle", X: x, Y: y, R: 4.5, Class: "access read", Title: title})
	case a.Accepted:
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x - 4.5, Y: y - 4.5, W: 9, H: 9, Class: "access write", Title: title})
	default:
		b.cross(x, y, 5, witnessRed, title)
	}
}

// clock draws a host's clock offset from true time as a line in its row.
func (b *tlBuilder) clock(h scenarios.Host, r row) {
	t := b.t
	pts := clockOffsets(h, b.res.End)
	lo, hi := time.Duration(0), time.Duration(0)
	for _, p := range pts {
		lo, hi = min(lo, p.off), max(hi, p.off)
	}
	top, bot := r.y+7, r.y+r.h-7
	keyed := h.Role != "client" && b.mech != nil && !b.huge && b.nodeHasKeys(h.Name)
	if keyed {
		// The key lane takes the top of the row; the clock sits under it.
		if trivialClock(h) {
			return
		}
		r = row{y: r.y + keyRowH, h: r.h - keyRowH}
		top, bot = r.y+4, r.y+r.h-4
	}
	yOf := func(off time.Duration) float64 {
		if hi == lo {
			return (top + bot) / 2
		}
		return bot - float64(off-lo)/float64(hi-lo)*(bot-top)
	}
	if trivialClock(h) {
		t.Plot = append(t.Plot, shape{Kind: "line", X: t.X0, Y: yOf(0), X2: t.X1, Y2: yOf(0), Stroke: "#cbd5e1", SW: 1})
		t.Over = append(t.Over, shape{Kind: "text", X: t.X0 + 4, Y: yOf(0) - 4, Text: "clock = true time", Size: 10, Fill: "#94a3b8"})
		return
	}
	t.Plot = append(t.Plot, shape{Kind: "line", X: t.X0, Y: yOf(0), X2: t.X1, Y2: yOf(0), Stroke: "#cbd5e1", SW: 1, Dash: "3 3"})
	var d strings.Builder
	for i, p := range pts {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f", cmd, b.x(p.at), yOf(p.off))
	}
	title := fmt.Sprintf("%s's clock minus true time (offset %s", h.Name, signed(h.Offset))
	if h.PPM != 0 {
		title += fmt.Sprintf(", rate %+d ppm", h.PPM)
	}
	title += ")"
	t.Plot = append(t.Plot, shape{Kind: "path", D: d.String(), Stroke: "#be123c", SW: 2, Fill: "none", Class: "clock", Title: title})
	t.Over = append(t.Over, shape{Kind: "text", X: t.X0 + 4, Y: r.y + 11, Text: fmt.Sprintf("clock − true time: %s … %s", signed(lo), signed(hi)), Size: 10, Fill: "#be123c", Halo: true})
	for _, c := range h.Clock {
		if c.At < b.from || c.At > b.to {
			continue
		}
		var txt string
		switch {
		case c.Jump != 0:
			txt = "jumps " + signed(c.Jump)
		default:
			txt = fmt.Sprintf("rate %+d ppm", c.PPM)
		}
		t.Plot = append(t.Plot, shape{Kind: "text", X: b.x(c.At) + 4, Y: r.y + r.h/2 + 4, Text: txt, Size: 10.5, Fill: "#be123c", Weight: "700"})
	}
}

type offsetPoint struct {
	at, off time.Duration
}

func trivialClock(h scenarios.Host) bool { return h.Offset == 0 && h.PPM == 0 && len(h.Clock) == 0 }

// clockOffsets turns a host's clock description into its offset from true
// time at every change (twice: before and after a jump) and at end.
func clockOffsets(h scenarios.Host, end time.Duration) []offsetPoint {
	ch := append([]sim.ClockChange(nil), h.Clock...)
	sort.SliceStable(ch, func(i, j int) bool { return ch[i].At < ch[j].At })
	off, ppm, at := h.Offset, h.PPM, time.Duration(0)
	grow := func(d time.Duration) time.Duration {
		return time.Duration(int64(d) / 1_000_000 * ppm)
	}
	pts := []offsetPoint{{0, off}}
	for _, c := range ch {
		before := off + grow(c.At-at)
		pts = append(pts, offsetPoint{c.At, before})
		off = before + c.Jump
		if c.Jump != 0 {
			pts = append(pts, offsetPoint{c.At, off})
		}
		ppm, at = c.PPM, c.At
	}
	if end > at {
		pts = append(pts, offsetPoint{end, off + grow(end-at)})
	}
	return pts
}

// witness highlights the evidence of each violation.
func (b *tlBuilder) witness(clientRowsEnd float64, laneTops []float64) {
	t := b.t
	w := b.res.Report.Witness
	lane := 0
	leader := func(x float64) {
		if lane < len(laneTops) {
			t.Back = append(t.Back, shape{Kind: "line", X: x, Y: laneTops[lane], X2: x, Y2: t.Y0, Stroke: witnessRed, SW: 1.2})
		}
		lane++
	}
	if o := w.MutualExclusion; o != nil && b.visible(o.From, o.To) {
		x0, x1 := b.x(o.From), b.x(o.To)
		wd := math.Max(x1-x0, 2)
		holders := witnessClients(o)
		clients := strings.Join(holders, " ")
		title := "mutual exclusion violated: " + o.String()
		// The window across every client row, deep red on the two holders.
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: t.Y0, W: wd, H: clientRowsEnd - t.Y0, Fill: witnessRed, Opacity: 0.05, Stroke: witnessRed, SW: 2,
			ID: t.P + "witness-overlap", Class: "witness witness-overlap", Clients: clients,
			Label: fmt.Sprintf("overlap %s %s %s", clients, checker.Sec(o.From), checker.Sec(o.To)),
			Title: title})
		for _, c := range holders {
			if r, ok := b.rowOf[c]; ok {
				t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: r.y + 1, W: wd, H: r.h - 2, Fill: witnessRed, Opacity: 0.22, Class: "witness-holder", Clients: c, Title: title})
			}
		}
		leader(b.xc(o.From))
	}
	if r := w.Resource; r != nil && b.visible(r.Write.At, r.Write.At) {
		clients := r.Write.Client + " " + r.Overwritten.Client
		title := "resource violated: " + r.String()
		for _, a := range []checker.Access{r.Write, r.Overwritten} {
			if a.At < b.from || a.At > b.to {
				continue
			}
			isWrite := a == r.Write
			for _, key := range []string{a.Client, "store:" + scenarios.ResourceHost} {
				rr, ok := b.rowOf[key]
				if !ok {
					continue
				}
				y := rr.y + rr.h/2 - 4
				if key == a.Client {
					y = b.accessY(rr)
				}
				s := shape{Kind: "circle", X: b.x(a.At), Y: y, R: 10, Fill: "none", Stroke: witnessRed, SW: 3, Title: title, Class: "witness-ring"}
				if !isWrite {
					s.Dash, s.SW = "3 2", 2
				}
				if isWrite && key == a.Client {
					s.ID, s.Class, s.Clients = t.P+"witness-resource", "witness witness-resource witness-ring", clients
					s.Label = fmt.Sprintf("%s %s %d %s", r.Kind, r.Write.Client, r.Write.Value, checker.Sec(r.Write.At))
				}
				t.Plot = append(t.Plot, s)
			}
		}
		if st, ok := b.rowOf["store:"+scenarios.ResourceHost]; ok && r.Overwritten.At >= b.from {
			y := st.y + st.h/2 - 4
			xa, xb := b.x(r.Overwritten.At), b.x(r.Write.At)
			d := fmt.Sprintf("M%.1f %.1fQ%.1f %.1f %.1f %.1f", xa, y-10, (xa+xb)/2, y-24, xb, y-10)
			t.Plot = append(t.Plot, shape{Kind: "path", D: d, Stroke: witnessRed, SW: 1.5, Dash: "4 3", Fill: "none", Title: title})
		}
		leader(b.xc(r.Write.At))
	}
	if u := w.Liveness; u != nil && b.visible(u.From, u.To) {
		x0, x1 := b.x(u.From), b.x(u.To)
		wd := math.Max(x1-x0, 2)
		title := "liveness violated: " + u.String()
		// An outline over every client row (nobody holds), hatching on the
		// rows of the clients that wait in vain.
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: t.Y0, W: wd, H: clientRowsEnd - t.Y0, Fill: "none", Stroke: witnessRed, SW: 2.5,
			ID: t.P + "witness-liveness", Class: "witness witness-liveness", Clients: strings.Join(u.Waiting, " "),
			Label: fmt.Sprintf("unavailable %s %s", checker.Sec(u.From), checker.Sec(u.To)), Title: title})
		for _, c := range u.Waiting {
			if r, ok := b.rowOf[c]; ok {
				t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: r.y + 3, W: wd, H: r.h - 6, Fill: "url(#" + t.P + "hatch-witness)", Class: "witness-wait", Title: title})
			}
		}
		leader(b.xc(u.From))
	}
}

// dur renders a duration for people: 1.34s, 250ms.
func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Second == 0 || d >= 10*time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Second:
		return fmt.Sprintf("%.3fs", d.Seconds())
	default:
		return d.Round(time.Microsecond).String()
	}
}

func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + dur(d)
	}
	return "-" + dur(-d)
}

// unavailableHolder says who held the lock during an unavailable stretch,
// as the checker found it: nobody, or a holder stuck past the longest
// hold (a hung worker whose watchdog keeps renewing).
func unavailableHolder(u *checker.Unavailable) string {
	switch len(u.Stuck) {
	case 0:
		return "nobody holds the lock"
	case 1:
		return u.Stuck[0] + " holds the lock without letting go"
	}
	return strings.Join(u.Stuck, ", ") + " hold the lock without letting go"
}
