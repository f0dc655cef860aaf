package reports

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/sim/event"
)

// A pooler's client→backend mapping over time, from the pooler's own
// db.pool.mapped events (sim/pgnode/bouncer.go records each hand-over): a
// backend serves a client from "assigned" to "released" (back to the
// pool) or "closed", with the reset query, when one runs, in between. The
// backends lane draws each stay as a thin bar in the client's colour under
// the backend's line, and a grant on the backend names the client the
// backend was serving then.

// poolMap is one client's stay on a backend.
type poolMap struct {
	Session, Conn, Client string // the backend, the client's connection to the pooler, its host
	From, To              time.Duration
	End                   string // "released", "closed", "end of run"
	Events                []int
}

// poolMaps reads the mapping from the events, by backend connection.
func poolMaps(events []event.Event) map[string][]poolMap {
	out := map[string][]poolMap{}
	open := map[string]*poolMap{} // backend → the stay open on it
	closeAt := func(m *poolMap, at time.Duration, why string, i int) {
		m.To, m.End = at, why
		m.Events = append(m.Events, i)
		out[m.Session] = append(out[m.Session], *m)
		delete(open, m.Session)
	}
	for _, i := range mappingOrder(events) {
		e := events[i]
		switch e.Reason {
		case "assigned":
			if m := open[e.Session]; m != nil {
				closeAt(m, e.At, "released", i)
			}
			open[e.Session] = &poolMap{Session: e.Session, Conn: e.Conn, Client: e.Client, From: e.At, Events: []int{i}}
		case "reset":
			if m := open[e.Session]; m != nil && m.Conn == e.Conn {
				m.Events = append(m.Events, i)
			}
		case "released", "closed":
			if m := open[e.Session]; m != nil && m.Conn == e.Conn {
				closeAt(m, e.At, e.Reason, i)
			}
		}
	}
	for _, k := range sortedKeysOf(open) {
		m := open[k]
		m.To, m.End = -1, "end of run"
		out[k] = append(out[k], *m)
	}
	return out
}

// mappingOrder lists the db.pool.mapped events with, at each instant,
// the ends of stays before the assignments: the trace orders events of
// one instant by their text (sim/trace.go), and a backend handed from
// one client to the next at once is released before it is assigned.
func mappingOrder(events []event.Event) []int {
	var ids []int
	for i, e := range events {
		if e.Kind == event.DBPoolMapped {
			ids = append(ids, i)
		}
	}
	slices.SortStableFunc(ids, func(a, b int) int {
		if c := cmp.Compare(events[a].At, events[b].At); c != 0 {
			return c
		}
		return cmp.Compare(b2i(events[a].Reason == "assigned"), b2i(events[b].Reason == "assigned"))
	})
	return ids
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mappedClients: per backend connection, the client each stay served,
// and "" from the stay's end ("the backend served nobody"), for
// stmtClients.at.
func mappedClients(maps map[string][]poolMap) stmtClients {
	out := stmtClients{}
	for conn, ms := range maps {
		for _, m := range ms {
			out[conn] = append(out[conn], stmtClient{m.From, m.Client})
			if m.To >= 0 {
				out[conn] = append(out[conn], stmtClient{m.To, ""})
			}
		}
	}
	return out
}

// drawPoolMaps draws backend l's stays at line y.
func (b *tlBuilder) drawPoolMaps(l *backendLine, name string, y float64) {
	t := b.t
	for _, m := range l.Maps {
		to := m.To
		if to < 0 {
			to = b.res.End
		}
		if !b.visible(m.From, to) {
			continue
		}
		x0, x1 := b.xc(m.From), b.xc(to)
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: y + 14.5, W: math.Max(x1-x0, 1.5), H: 2.5, Fill: b.ownerColor(m.Client), Class: "pool-map",
			Title:  fmt.Sprintf("the pooler serves %s with backend %s from %s to %s (%s)", m.Client, name, checker.Sec(m.From), checker.Sec(to), m.End),
			Events: eventIDs(m.Events), Label: fmt.Sprintf("poolmap %s %s from=%d to=%d end=%s", m.Session, m.Conn, m.From, m.To, url.QueryEscape(m.End))})
	}
}
