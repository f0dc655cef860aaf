package reports

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
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
	res      *runner.Result
	t        *timeline
	from, to time.Duration
	dense    bool
	huge     bool // more than 40 clients: no mechanism lanes (see mechRows)
	color    map[string]string
	rowOf    map[string]row
	mech     *mechanism

	voteClients, sessionClients []string
	backends                    []*backendLine       // database backends drawn (backends.go)
	permitLines                 [][]permitSpan       // a semaphore's set, packed in lines (permits.go)
	rwLines                     [][]rwSpan           // a reader-writer hash's holds (rwlane.go)
	holdBegan                   map[string]int       // client|start → its hold.began event (res.Events)
	accessed                    map[string]int       // client|at|READ or WRITE → the store's command.executed (res.Events)
	spans                       map[string]faultSpan // a fault's events, by its time and text (faultspan.go)
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
func buildTimeline(res *runner.Result, prefix string, from, to time.Duration, zoomed bool) *timeline {
	return buildTimelineMech(res, deriveMechanism(res), prefix, from, to, zoomed)
}

// buildTimelineMech is buildTimeline with the mechanism already derived
// (nil draws no mechanism lanes).
func buildTimelineMech(res *runner.Result, mech *mechanism, prefix string, from, to time.Duration, zoomed bool) *timeline {
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
	b.holdBegan, b.accessed, b.spans = map[string]int{}, map[string]int{}, map[string]faultSpan{}
	for i, e := range res.Events {
		if e.Kind == event.HoldBegan {
			b.holdBegan[fmt.Sprint(e.Actor, "|", e.At)] = i
		}
		if e.Kind == event.CommandExecuted && e.Node == scenarios.ResourceHost {
			b.accessed[fmt.Sprint(e.Client, "|", e.At, "|", e.Op)] = i
		}
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
	faultLanes, shown := b.faultLanes()
	laneTops, y := b.placeLanes(faultLanes, b.witnessLanes(), y)

	// Time axis on top.
	axisTop := y
	y += 22
	t.Y0 = y

	// Rows.
	y, clientRowsEnd := b.placeRows(b.rowSpecs(clients), y)
	t.Y1 = y
	t.Over = append(t.Over, shape{Kind: "line", X: t.X0 - 4, Y: t.Y0, X2: t.X0 - 4, Y2: t.Y1, Stroke: "#cbd5e1", SW: 1})

	// Axis ticks and grid lines.
	b.axis(axisTop, y)
	y += 24
	t.Height = y

	// Fault windows, shaded across all rows, with a leader to their label.
	b.faultWindows(shown, laneTops)

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
	t.Legend = b.legend()
}

// rowSpecs lists the timeline's rows: the clients, the mechanism's lanes,
// the hosts, and the clocks of clients whose clock is not true time.
func (b *tlBuilder) rowSpecs(clients []string) []rowSpec {
	res := b.res
	var specs []rowSpec
	rowH := 58.0
	if b.dense {
		rowH = 22
	}
	for _, c := range clients {
		specs = append(specs, rowSpec{name: c, sub: "client", kind: "client", h: rowH})
	}
	specs = append(specs, b.mechRows(clients)...)
	clientHosts := map[string]runner.Host{}
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
	return specs
}

// placeRows lays the rows out from y, with their names, and returns the
// y below them and the bottom of the client rows.
func (b *tlBuilder) placeRows(specs []rowSpec, y float64) (float64, float64) {
	t := b.t
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
	return y, clientRowsEnd
}

// faultWindows shades each shown fault over the rows, with a leader to
// its lane, and draws what it did to its target's row.
func (b *tlBuilder) faultWindows(shown []faults.Applied, laneTops []float64) {
	t := b.t
	for i, a := range shown {
		title := faultTitle(a)
		sp := b.spanOf(a)
		ids := eventIDs(sp.ids())
		if until := sp.Until; until > a.At && a.Fault.Kind == faults.Partition && len(a.Fault.Groups) > 0 && b.partitionRows(a, sp, title) {
			// A partition is drawn on the rows it cuts off, not across
			// the whole picture.
		} else if until > a.At {
			s := shape{Kind: "rect", X: b.xc(a.At), Y: t.Y0, W: b.xc(until) - b.xc(a.At), H: t.Y1 - t.Y0, Fill: "#fde68a", Opacity: 0.35, Class: "fault-window", Title: title,
				Label: fmt.Sprintf("fault %s %s %s", a.Fault.Kind, checker.Sec(a.At), checker.Sec(until)), Events: ids}
			if sp.Forever {
				s.Class += " fault-forever"
				s.Stroke, s.SW, s.Dash = faultAmber, 1, "6 4"
			}
			t.Back = append(t.Back, s)
		}
		t.Plot = append(t.Plot, shape{Kind: "line", X: b.x(a.At), Y: t.Y0, X2: b.x(a.At), Y2: t.Y1, Stroke: faultAmber, SW: 1.2, Dash: "4 3", Class: "fault-start",
			Label: fmt.Sprintf("faultstart %s %s", a.Fault.Kind, checker.Sec(a.At)), Events: eventIDs(firstID(sp.ids()))})
		if i < maxFaultLanes {
			t.Back = append(t.Back, shape{Kind: "line", X: b.xc(a.At), Y: laneTops[i], X2: b.xc(a.At), Y2: t.Y0, Stroke: faultAmber, SW: 0.8, Dash: "2 2"})
		}
		b.faultOnRow(a)
	}
}

// legend is the timeline's legend: the client rows' marks, then the
// mechanism's.
func (b *tlBuilder) legend() []legendItem {
	out := []legendItem{
		{Swatch: "sw-hold", Fill: palette[0], Text: "hold: from the acquire's return until the client releases, crashes, learns it lost the lock or finds its own lease run out — a deadline it never checks does not end it (one colour per client)"},
		{Swatch: "sw-want", Text: "wants the lock and waits"},
		{Swatch: "sw-fault", Text: "fault window"},
		{Swatch: "sw-pause", Text: "client paused / host down"},
		{Swatch: "sw-witness", Text: "violation witness"},
		{Swatch: "sw-read", Text: "read of the resource"},
		{Swatch: "sw-write", Text: "accepted write"},
		{Swatch: "sw-reject", Text: "rejected write"},
	}
	return append(out, b.mechLegend()...)
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
		ids := eventIDs(b.overlapEvents(o))
		// The window across every client row, deep red on the two holders.
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: t.Y0, W: wd, H: clientRowsEnd - t.Y0, Fill: witnessRed, Opacity: 0.05, Stroke: witnessRed, SW: 2,
			ID: t.P + "witness-overlap", Class: "witness witness-overlap", Clients: clients,
			Label: fmt.Sprintf("overlap %s %s %s", clients, checker.Sec(o.From), checker.Sec(o.To)),
			Title: title, Events: ids})
		for _, c := range holders {
			if r, ok := b.rowOf[c]; ok {
				t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: r.y + 1, W: wd, H: r.h - 2, Fill: witnessRed, Opacity: 0.22, Class: "witness-holder", Clients: c, Title: title, Events: ids})
			}
		}
		leader(b.xc(o.From))
	}
	if r := w.Resource; r != nil && b.visible(r.Write.At, r.Write.At) {
		clients := r.Write.Client + " " + r.Overwritten.Client
		title := "resource violated: " + r.String()
		ids := eventIDs(b.resourceEvents(r))
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
				s := shape{Kind: "circle", X: b.x(a.At), Y: y, R: 10, Fill: "none", Stroke: witnessRed, SW: 3, Title: title, Class: "witness-ring", Events: ids}
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
			t.Plot = append(t.Plot, shape{Kind: "path", D: d, Stroke: witnessRed, SW: 1.5, Dash: "4 3", Fill: "none", Title: title, Events: ids})
		}
		leader(b.xc(r.Write.At))
	}
	if u := w.Liveness; u != nil && b.visible(u.From, u.To) {
		x0, x1 := b.x(u.From), b.x(u.To)
		wd := math.Max(x1-x0, 2)
		title := "liveness violated: " + u.String()
		ids := eventIDs(b.unavailableEvents(u))
		// An outline over every client row (nobody holds), hatching on the
		// rows of the clients that wait in vain.
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: t.Y0, W: wd, H: clientRowsEnd - t.Y0, Fill: "none", Stroke: witnessRed, SW: 2.5,
			ID: t.P + "witness-liveness", Class: "witness witness-liveness", Clients: strings.Join(u.Waiting, " "),
			Label: fmt.Sprintf("unavailable %s %s stuck=%s", checker.Sec(u.From), checker.Sec(u.To), strings.Join(u.Stuck, ",")), Title: title, Events: ids})
		for _, c := range u.Waiting {
			if r, ok := b.rowOf[c]; ok {
				t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: r.y + 3, W: wd, H: r.h - 6, Fill: "url(#" + t.P + "hatch-witness)", Class: "witness-wait", Title: title, Events: ids,
					Label: fmt.Sprintf("waiting %s %s %s", c, checker.Sec(u.From), checker.Sec(u.To))})
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
