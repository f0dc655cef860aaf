package reports

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/locklab/locklab/runner"
)

// The herd chart shows the watch notifications each waiter received, one
// panel per recipe on the same scale: with one shared node every release
// wakes every remaining waiter (a staircase summing to n(n+1)/2), with the
// queue each waiter is woken once.

type herdRun struct {
	Algorithm string
	Clients   []string
	Counts    []int
	// Events are the watch notifications counted (indexes in that run's
	// res.Events): the panel's count label names them in data-events.
	Events []int
}

// herdRuns lists the notifications per client of a run and of every
// algorithm run beside it.
func herdRuns(in RunInput) []herdRun {
	var out []herdRun
	add := func(res *runner.Result) {
		m := deriveMechanism(res)
		if m == nil || len(m.Notifies) == 0 {
			return
		}
		per := m.NotifiesPerClient()
		h := herdRun{Algorithm: res.Scenario.Algorithm}
		for _, n := range m.Notifies {
			h.Events = append(h.Events, n.Index)
		}
		for _, c := range res.Scenario.ClientNames() {
			h.Clients = append(h.Clients, c)
			h.Counts = append(h.Counts, per[c])
		}
		out = append(out, h)
	}
	add(in.Result)
	for _, c := range in.Compared {
		if c.Result != nil {
			add(c.Result)
		}
	}
	return out
}

type herdChart struct {
	Width, Height float64
	Shapes        []shape
	Caption       string
}

// newHerdChart draws the panels, or returns nil when there is no herd to
// show (fewer than two recipes, or a handful of notifications).
func newHerdChart(runs []herdRun) *herdChart {
	if len(runs) < 2 {
		return nil
	}
	most, total := 0, 0
	for _, r := range runs {
		for _, c := range r.Counts {
			most = max(most, c)
			total += c
		}
	}
	if total < 20 {
		return nil
	}
	const (
		width  = 1000.0
		left   = 70.0
		right  = 20.0
		panelH = 150.0
		top    = 34.0
	)
	ch := &herdChart{Width: width}
	y := 0.0
	for _, r := range runs {
		sum, peak := 0, 0
		for _, c := range r.Counts {
			sum += c
			peak = max(peak, c)
		}
		ch.Shapes = append(ch.Shapes, shape{Kind: "text", X: 8, Y: y + 18, Text: fmt.Sprintf("%s: %d watch notifications in all, at most %d to one waiter", r.Algorithm, sum, peak), Size: 14, Weight: "700", Fill: "#0f172a",
			Label: fmt.Sprintf("herd %s %d", r.Algorithm, sum), Events: eventRanges(r.Events)})
		base := y + top + panelH - 30
		h := panelH - 40
		ch.Shapes = append(ch.Shapes,
			shape{Kind: "line", X: left, Y: base, X2: width - right, Y2: base, Stroke: "#94a3b8", SW: 1},
			shape{Kind: "line", X: left, Y: base - h, X2: left, Y2: base, Stroke: "#94a3b8", SW: 1},
			shape{Kind: "text", X: left - 6, Y: base - h + 4, Text: fmt.Sprint(most), Size: 11, Anchor: "end", Fill: "#475569"},
			shape{Kind: "text", X: left - 6, Y: base + 4, Text: "0", Size: 11, Anchor: "end", Fill: "#475569"},
		)
		n := len(r.Counts)
		bw := (width - left - right) / math.Max(float64(n), 1)
		for i, c := range r.Counts {
			bh := 0.0
			if most > 0 {
				bh = float64(c) / float64(most) * h
			}
			ch.Shapes = append(ch.Shapes, shape{Kind: "rect", X: left + float64(i)*bw + bw*0.1, Y: base - bh, W: math.Max(bw*0.8, 0.8), H: bh,
				Title: fmt.Sprintf("%s: %s received %d notifications", r.Algorithm, r.Clients[i], c)})
		}
		ch.Shapes = append(ch.Shapes, shape{Kind: "text", X: (left + width - right) / 2, Y: base + 18, Text: fmt.Sprintf("one bar per client, %s … %s", r.Clients[0], r.Clients[n-1]), Size: 11, Anchor: "middle", Fill: "#475569"})
		y += panelH + top
	}
	ch.Height = y
	ch.Caption = "Watch notifications per waiter, one panel per recipe, on the same scale. With one shared node every release wakes every remaining waiter; with the queue each waiter watches only its predecessor and is woken once."
	return ch
}

// eventRanges is eventIDs with each run of three or more consecutive ids
// written first-last: a herd's thousands of notifications arrive in a
// hundred runs, and the lesson page stays light.
func eventRanges(ids []int) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j-i >= 2 {
			fmt.Fprintf(&b, "%d-%d", ids[i], ids[j])
		} else {
			j = i
			b.WriteString(strconv.Itoa(ids[i]))
		}
		i = j + 1
	}
	return b.String()
}
