package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim"
)

// Clocks: a host's clock offset from true time, drawn in its row from the
// host's clock description (offset, drift, steps).

// clock draws a host's clock offset from true time as a line in its row.
func (b *tlBuilder) clock(h runner.Host, r row) {
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

func trivialClock(h runner.Host) bool { return h.Offset == 0 && h.PPM == 0 && len(h.Clock) == 0 }

// clockOffsets turns a host's clock description into its offset from true
// time at every change (twice: before and after a jump) and at end.
func clockOffsets(h runner.Host, end time.Duration) []offsetPoint {
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
