package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/event"
)

// The event log as a report shows it: one row per typed event rendered as
// text, the lock's own events marked, routine ones left out past a bound.

// maxTraceRows bounds the event log kept in a single run's report.
const maxTraceRows = 5000

type traceRow struct {
	At    string
	Actor string
	Text  string
	Class string
}

// lockEvent marks the trace rows about the lock itself: a hold begins or
// is lost, a write is refused or skipped, a key or a session expires.
var lockEvent = map[event.Kind]bool{
	event.HoldBegan: true, event.HoldLost: true, event.WriteRejected: true, event.WriteSkipped: true,
	event.KeyExpired: true, event.SessionExpired: true,
}

func traceRows(res *runner.Result) ([]traceRow, int, []string) {
	entries := res.Events
	type window struct{ from, to time.Duration }
	var hot []window
	w := res.Report.Witness
	if o := w.MutualExclusion; o != nil {
		hot = append(hot, window{o.From, o.To})
	}
	if r := w.Resource; r != nil {
		hot = append(hot, window{r.Write.At, r.Write.At}, window{r.Overwritten.At, r.Overwritten.At})
	}
	if u := w.Liveness; u != nil {
		hot = append(hot, window{u.From, u.From}, window{u.To, u.To})
	}
	seen := map[string]bool{}
	var actors []string
	rows := make([]traceRow, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		class := ""
		switch {
		case e.Actor == "faults":
			class = "ev-fault"
		case lockEvent[e.Kind]:
			class = "ev-lock"
		}
		for _, h := range hot {
			if e.At >= h.from && e.At <= h.to {
				class += " ev-witness"
				break
			}
		}
		rows = append(rows, traceRow{At: fmt.Sprintf("%.6f", e.At.Seconds()), Actor: e.Actor, Text: e.Text(), Class: strings.TrimSpace(class)})
		if !seen[e.Actor] {
			seen[e.Actor] = true
			actors = append(actors, e.Actor)
		}
	}
	sort.Strings(actors)
	rows, omitted := capRows(rows, maxTraceRows)
	return rows, omitted, actors
}

// capRows keeps at most n rows of an event log: every fault, lock event and
// witness row first (in time order, up to n), then the earliest others.
func capRows(rows []traceRow, n int) ([]traceRow, int) {
	if len(rows) <= n {
		return rows, 0
	}
	keep := make([]bool, len(rows))
	kept := 0
	for i, r := range rows {
		if kept < n && r.Class != "" {
			keep[i] = true
			kept++
		}
	}
	for i := range rows {
		if kept < n && !keep[i] {
			keep[i] = true
			kept++
		}
	}
	out := make([]traceRow, 0, kept)
	for i, r := range rows {
		if keep[i] {
			out = append(out, r)
		}
	}
	return out, len(rows) - len(out)
}

// capTrace shortens a run view's event log to n rows.
func capTrace(v *runView, n int) {
	var more int
	v.Trace, more = capRows(v.Trace, n)
	v.TraceOmitted += more
}
