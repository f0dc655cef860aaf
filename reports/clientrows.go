package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// The client rows: when a client waited for the lock, the holds it
// believed it had (a reader's and a writer's by their mode), and its
// accesses to the protected resource with the store's answer.

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
	if iv.LockValue != "" {
		title += "; lock value " + iv.LockValue
	}
	if iv.FencingToken != 0 {
		title += fmt.Sprintf("; fencing token %d", iv.FencingToken)
	}
	s := shape{Kind: "rect", X: x0, Y: by, W: w, H: bh, Fill: b.color[iv.Client], Class: "hold", Title: title}
	if id, ok := b.holdBegan[fmt.Sprint(iv.Client, "|", iv.Start)]; ok {
		s.Events = eventIDs([]int{id})
	}
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
	if iv.FencingToken != 0 {
		label += fmt.Sprintf(" (token %d)", iv.FencingToken)
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
	ids   []int // the access's event (data-events of the label)
}

// accessLabel is the data-label of an access marker: the claim
// TestDrawnClaimsAreEvents re-derives from the store's command.executed
// event — who, read or write, accepted or not, and the comparison the
// store made (the token against the highest it had seen), only when the
// access carried a token: a herd's hundreds of markers stay light.
func accessLabel(a checker.Access) string {
	verdict := "ok"
	if !a.Accepted {
		verdict = "rejected"
	}
	label := fmt.Sprintf("access %s %s at=%d %s", a.Client, a.Kind, a.At, verdict)
	if a.FencingToken != 0 {
		label += fmt.Sprintf(" fence=%d highest=%d", a.FencingToken, a.Highest)
	}
	return label
}

// accessEvent is the store's command.executed event of an access (sim
// records the access in the same step the store executes the command),
// or nil when the log has none.
func (b *tlBuilder) accessEvent(a checker.Access) []int {
	if id, ok := b.accessed[fmt.Sprint(a.Client, "|", a.At, "|", strings.ToUpper(a.Kind))]; ok {
		return []int{id}
	}
	return nil
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
		if a.FencingToken != 0 {
			title += fmt.Sprintf(" (fencing token %d)", a.FencingToken)
		}
		ids := b.accessEvent(a)
		if r, ok := b.rowOf[a.Client]; ok {
			b.marker(a, x, b.accessY(r), title, ids)
			addMark(a.Client, accessMark{x, short, ids})
		}
		if hasStore && a.Kind == "write" {
			// The store lane repeats the client row's marker; its tooltip is
			// only written once, on the client row, when there is one.
			// So are its events and claim.
			storeTitle, storeIDs := title, ids
			if _, ok := b.rowOf[a.Client]; ok {
				storeTitle, storeIDs = "", nil
			}
			b.marker(a, x, store.y+store.h/2-4, storeTitle, storeIDs)
			txt := fmt.Sprintf("%d by %s", a.Value, a.Client)
			if !a.Accepted {
				txt = "rejects " + a.Client
			}
			if fl := fenceLabel(a); fl != "" {
				txt += ": " + fl
			}
			addMark("store:"+scenarios.ResourceHost, accessMark{x, txt, ids})
		}
	}
	if b.dense {
		return
	}
	b.accessLabels(rowOrder, byRow)
	if hasStore {
		t.Plot = append(t.Plot, shape{Kind: "text", X: t.X0 + 4, Y: store.y + 11, Text: fmt.Sprintf("stock starts at %d", b.res.History.Initial), Size: 10, Fill: "#64748b"})
	}
}

// accessLabels writes the labels of the access markers, row by row.
func (b *tlBuilder) accessLabels(rowOrder []string, byRow map[string][]accessMark) {
	t := b.t
	// Markers closer than a few pixels share one label, placed after
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
			ids := slices.Clone(marks[i].ids)
			for j+1 < len(marks) && marks[j+1].x-marks[j].x < 12 {
				j++
				texts = append(texts, marks[j].short)
				ids = append(ids, marks[j].ids...)
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
				t.Plot = append(t.Plot, shape{Kind: "text", X: x, Y: y, Text: label, Size: 10, Fill: "#334155", Anchor: anchor, Events: eventIDs(ids)})
				lastEnd = max(end, marks[j].x+6)
			}
			i = j + 1
		}
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

// marker draws one access; ids are its event, named in data-events with
// the access's claim in data-label.
func (b *tlBuilder) marker(a checker.Access, x, y float64, title string, ids []int) {
	t := b.t
	s := shape{Title: title}
	if ids != nil {
		s.Events, s.Label = eventIDs(ids), accessLabel(a)
	}
	switch {
	case a.Kind == "read":
		s.Kind, s.X, s.Y, s.R, s.Class = "circle", x, y, 4.5, "access read"
	case a.Accepted:
		s.Kind, s.X, s.Y, s.W, s.H, s.Class = "rect", x-4.5, y-4.5, 9, 9, "access write"
	default:
		b.cross(x, y, 5, witnessRed, title)
		if ids != nil {
			t.Plot[len(t.Plot)-1].Events, t.Plot[len(t.Plot)-1].Label = s.Events, s.Label
		}
		return
	}
	t.Plot = append(t.Plot, s)
}
