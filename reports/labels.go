package reports

// Labels beside bars (issue 21, item 3). A lane's label ("promoted to
// master", "token 33", "restarts (persistence none)", "SUSPENDED → LOST")
// is drawn where its event happened, and a bar of the same lane often
// starts or ends right there: the bar's edge or outline then stripes the
// text. A label may sit inside a bar (a key's owner inside its key span) or
// beside it, never half over one. settleLabels runs once every shape of a
// timeline is drawn and moves each label that crosses a bar to the nearest
// free place on its line: past the bar's end, or before its start.

import (
	"math"
	"slices"
	"strings"
)

// barClasses are the classes of the shapes that draw an interval.
var barClasses = []string{"hold", "key-span", "key-nominal", "validity", "vote", "role", "session", "znode", "fault", "want"}

func isBar(s shape) bool {
	if s.Kind != "rect" {
		return false
	}
	for _, c := range strings.Fields(s.Class) {
		if slices.Contains(barClasses, c) {
			return true
		}
	}
	return false
}

// box is a rectangle in the timeline's coordinates.
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool {
	return math.Min(a.x1, b.x1) > math.Max(a.x0, b.x0) && math.Min(a.y1, b.y1) > math.Max(a.y0, b.y0)
}

func (a box) within(b box) bool {
	return a.x0 >= b.x0 && a.x1 <= b.x1 && a.y0 >= b.y0 && a.y1 <= b.y1
}

// labelMargin widens a label's estimated box: the estimate is per rune,
// the browser's font decides the real width.
const labelMargin = 4

// labelWidth estimates the width of a label in the timeline's font —
// Liberation Sans, or DejaVu Sans where it is missing (report.css) — from
// rune classes, taking the wider of the two: capitals are wider than the
// average rune that textWidth assumes, and an arrow is as wide as the font
// is tall. Erring wide only moves a label a little further.
func labelWidth(text string, size float64, bold bool) float64 {
	var em float64
	for _, r := range text {
		switch {
		case r == ' ' || r == '.' || r == ',' || r == ':' || r == '\'' || r == 'i' || r == 'l' || r == 'j' || r == 't' || r == 'f' || r == '(' || r == ')':
			em += 0.36
		case r >= 'A' && r <= 'Z':
			em += 0.75
		case r >= '0' && r <= '9':
			em += 0.64
		case r == 'm' || r == 'w' || r == 'M' || r == 'W':
			em += 0.95
		case r < 128:
			em += 0.62
		default:
			em += 1.0 // arrows, ≥, ✓ and the like
		}
	}
	if bold {
		em *= 1.1
	}
	return em * size
}

// textBox estimates where a text shape lands.
func textBox(s shape) box {
	size := s.Size
	if size == 0 {
		size = 11
	}
	w := labelWidth(s.Text, size, s.Weight == "700")
	x0 := s.X
	switch s.Anchor {
	case "end":
		x0 = s.X - w
	case "middle":
		x0 = s.X - w/2
	}
	// The box getBBox gives a text element: the font's ascent above the
	// baseline, its descent below (DejaVu Sans: 0.928 and 0.236 em;
	// Liberation Sans: 0.905 and 0.212).
	return box{x0 - labelMargin/2, s.Y - size*0.93, x0 + w + labelMargin/2, s.Y + size*0.24}
}

// settleLabels moves labels off the bars they cross. Labels in the left
// margin (row names) and on the axis are not the lanes' and stay.
func settleLabels(t *timeline) {
	var bars []box
	for _, group := range [][]shape{t.Back, t.Plot} {
		for _, s := range group {
			if isBar(s) {
				// Bars are clipped to the plot area.
				b := box{math.Max(s.X, t.X0), s.Y, math.Min(s.X+s.W, t.X1), s.Y + s.H}
				if b.x1 > b.x0 {
					bars = append(bars, b)
				}
			}
		}
	}
	// Every lane label, where it is now: a move must not land on another.
	type label struct {
		s   *shape
		box box
	}
	var labels []label
	for _, group := range []*[]shape{&t.Back, &t.Plot, &t.Over} {
		for i := range *group {
			s := &(*group)[i]
			if s.Kind == "text" && s.X >= t.X0 && s.Y <= t.Y1 {
				labels = append(labels, label{s, textBox(*s)})
			}
		}
	}
	dropped := map[*shape]bool{}
	for i := range labels {
		l := &labels[i]
		coversEarlier := false
		for j := range i {
			if !dropped[labels[j].s] && l.box.overlaps(labels[j].box) {
				coversEarlier = true
			}
		}
		if !coversEarlier && !crossesBar(l.box, bars) {
			continue
		}
		others := make([]box, 0, len(labels)-1)
		for j := range labels {
			if j != i && !dropped[labels[j].s] {
				others = append(others, labels[j].box)
			}
		}
		dx, dy, ok := freeShift(l.box, bars, others, t.X0, t.X1)
		if !ok {
			// Nowhere on its lane is free (a zoomed view packed with
			// bars): the bar's tooltip still says it, and the whole
			// run's timeline shows the label.
			dropped[l.s] = true
			l.s.Kind = "" // removed below
			continue
		}
		l.s.X += dx
		l.s.Y += dy
		l.box = box{l.box.x0 + dx, l.box.y0 + dy, l.box.x1 + dx, l.box.y1 + dy}
	}
	if len(dropped) > 0 {
		for _, group := range []*[]shape{&t.Back, &t.Plot, &t.Over} {
			*group = slices.DeleteFunc(*group, func(s shape) bool { return s.Kind == "" })
		}
	}
}

// crossesBar reports whether a label box overlaps a bar without lying
// inside it.
func crossesBar(lb box, bars []box) bool {
	for _, b := range bars {
		if lb.overlaps(b) && !lb.within(b) {
			return true
		}
	}
	return false
}

// maxNudge bounds a vertical move: a label stays on its lane.
const maxNudge = 12.0

// freeShift finds the smallest move that puts the label where it crosses
// no bar and covers no other label, inside [x0, x1], moving by at most
// maxNudge up or down. The horizontal candidates are the edges of what is
// near the label's line — just past a bar's or a label's end, just before
// its start — at every vertical offset; a vertical pixel costs as much as
// eight horizontal ones.
func freeShift(lb box, bars, others []box, x0, x1 float64) (dx, dy float64, ok bool) {
	w := lb.x1 - lb.x0
	near := func(b box) bool { return b.y1 > lb.y0-maxNudge && b.y0 < lb.y1+maxNudge }
	var nearBars, nearLabels []box
	xs := []float64{0}
	for _, b := range bars {
		if near(b) {
			nearBars = append(nearBars, b)
			xs = append(xs, b.x1+1-lb.x0, b.x0-1-w-lb.x0)
		}
	}
	for _, o := range others {
		if near(o) {
			nearLabels = append(nearLabels, o)
			xs = append(xs, o.x1+1-lb.x0, o.x0-1-w-lb.x0)
		}
	}
	type move struct{ dx, dy float64 }
	var cands []move
	for d := -maxNudge; d <= maxNudge; d++ {
		for _, x := range xs {
			cands = append(cands, move{x, d})
		}
	}
	cost := func(m move) float64 { return math.Abs(m.dx) + 8*math.Abs(m.dy) }
	slices.SortStableFunc(cands, func(a, b move) int {
		switch ca, cb := cost(a), cost(b); {
		case ca < cb:
			return -1
		case ca > cb:
			return 1
		}
		return 0
	})
	for _, m := range cands {
		nb := box{lb.x0 + m.dx, lb.y0 + m.dy, lb.x1 + m.dx, lb.y1 + m.dy}
		if nb.x0 < x0 || nb.x1 > x1 || crossesBar(nb, nearBars) || slices.ContainsFunc(nearLabels, nb.overlaps) {
			continue
		}
		return m.dx, m.dy, true
	}
	return 0, 0, false
}

// Names is the timeline's left column, copied for the lane names that stay
// in view on a phone while the plot scrolls (report.css, svg.tl-names):
// the row backgrounds and lines, and every label that ends left of the
// plot. The copies carry no id, claim or event ids: the page states each
// once.
func (t *timeline) Names() []shape {
	var out []shape
	plain := func(s shape) shape {
		s.ID, s.Label, s.Events, s.Clients = "", "", "", ""
		return s
	}
	for _, s := range t.Back {
		if s.Kind == "rect" || s.Kind == "line" {
			out = append(out, plain(s))
		}
	}
	for _, s := range t.Over {
		switch {
		case s.Kind == "line" && s.X <= 0:
			out = append(out, plain(s))
		case s.Kind != "text":
		case s.Anchor == "end" && s.X <= t.X0:
			out = append(out, plain(s))
		case s.Anchor != "end" && s.Anchor != "middle" && s.X+labelWidth(s.Text, s.Size, s.Weight != "") <= t.X0+4:
			out = append(out, plain(s))
		}
	}
	return out
}
