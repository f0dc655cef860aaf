package reports

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/event"
)

// The database mechanism: a database's lock belongs to a server session (a
// backend), not to a client. A pool keeps the backend, and its session
// locks, after the client is done with it; PgBouncer hands one backend to
// whichever client sends the next transaction; a server ends a session on
// wait_timeout, a failed keepalive, a KILL or a crash, and its locks go
// with it. So the lane draws one line per backend — a connection to a
// database server (sim/dbnet names them "c1#1>db1") — with the locks the
// server granted it, how each ended, and how the session ended, all from
// the db.* events (sim/event/kinds.go). A lock a backend holds while no
// client holds the lock is said so: "held by pgbouncer#1 (no client holds
// it: idle in the pool)", not "nobody holds".

// backendHold is one lock a server granted a backend.
type backendHold struct {
	Conn, Key, Op string
	From, To      time.Duration
	End           string // "released", "freed by COMMIT", "freed by the pooler's reset (DISCARD ALL)", "session ended: <reason>", "server crashed", "end of run"
	// Grants and Releases count the server's grants and releases while
	// the backend held it: a session-level advisory lock stacks, so it is
	// held until as many unlocks as grants (PostgreSQL's "Advisory
	// Locks"), or until the session ends.
	Grants, Releases int
	// For: per grant, the client whose statement the backend ran (a
	// pooler's backend serves many; "" when not known).
	For    []string
	Events []int
}

// backendMark is a session's end or its connection's trouble.
type backendMark struct {
	Conn, What string // What: "session ended: wait_timeout", "reset", "closed by server", "keepalive 3/3 unanswered"
	At         time.Duration
	Event      int
}

// backendLine is one backend: a connection to a database server.
type backendLine struct {
	Conn, Server, Owner string
	Holds               []backendHold
	Marks               []backendMark
	Maps                []poolMap // the clients a pooler served with it (poolmap.go)
}

// deriveBackends reads the backends of a database run from its events.
func deriveBackends(events []event.Event) []*backendLine {
	r := backendReader{events: events, byConn: map[string]*backendLine{}, open: map[string]*backendHold{}, dials: map[string]bool{}, lastPool: map[string]int{}}
	for _, e := range events {
		if e.Kind == event.DBConnOpened {
			r.dials[e.Client] = true // hosts that open connections to servers
		}
	}
	// A pooler says which client each of its backends serves
	// (db.pool.mapped); a client's own connection names no other client.
	r.maps = poolMaps(events)
	r.runsFor = mappedClients(r.maps)
	for _, i := range grantsLast(events) {
		r.read(i)
	}
	return finishBackends(r.lines, r.open, r.byConn)
}

// backendReader is deriveBackends' state while it reads the events.
type backendReader struct {
	events   []event.Event
	dials    map[string]bool
	maps     map[string][]poolMap
	runsFor  stmtClients
	lines    []*backendLine
	byConn   map[string]*backendLine
	open     map[string]*backendHold // conn+"|"+key → the hold open on it
	lastPool map[string]int          // backend → its pooler's last db.pool.mapped
}

// end closes the holds open on conn, but those keep spares, at the event
// ids (its cause).
func (r *backendReader) end(conn string, at time.Duration, why string, ids []int, keep func(*backendHold) bool) {
	for _, k := range sortedKeysOf(r.open) {
		h := r.open[k]
		if h.Conn != conn || keep != nil && keep(h) {
			continue
		}
		h.To, h.End = at, why
		h.Events = append(h.Events, ids...)
		r.byConn[conn].Holds = append(r.byConn[conn].Holds, *h)
		delete(r.open, k)
	}
}

// isXact: a transaction-level lock (pg_advisory_xact_lock), which its
// transaction's end frees and nothing else.
func isXact(h *backendHold) bool  { return strings.Contains(h.Op, "xact") }
func notXact(h *backendHold) bool { return !isXact(h) }

// read takes event i into the backends.
func (r *backendReader) read(i int) {
	e := r.events[i]
	l := r.byConn[e.Conn]
	switch e.Kind {
	case event.DBConnOpened:
		// A connection to a host that itself dials servers reaches a
		// pooler, not a backend.
		if !r.dials[e.Node] && l == nil {
			l = &backendLine{Conn: e.Conn, Server: e.Node, Owner: e.Client, Maps: r.maps[e.Conn]}
			r.byConn[e.Conn] = l
			r.lines = append(r.lines, l)
		}
	case event.DBPoolMapped:
		r.lastPool[e.Session] = i
	case event.DBLockGranted:
		if l == nil {
			break
		}
		h := r.open[e.Conn+"|"+e.Key]
		if h == nil {
			h = &backendHold{Conn: e.Conn, Key: e.Key, Op: e.Op, From: e.At}
			r.open[e.Conn+"|"+e.Key] = h
		}
		h.Grants++
		h.For = append(h.For, r.runsFor.at(e.Conn, e.At))
		h.Events = append(h.Events, i)
	case event.DBLockReleased:
		r.released(l, i)
	case event.DBSegmentReceived:
		// The server receives COMMIT or ROLLBACK: the transaction's
		// locks (pg_advisory_xact_lock's) go with it.
		if l != nil && e.Actor == l.Server && e.Dir == "request" && (e.Op == "COMMIT" || e.Op == "ROLLBACK") {
			r.end(e.Conn, e.At, "freed by "+e.Op, []int{i}, notXact)
		}
	case event.DBSessionEnded:
		if l != nil {
			r.end(e.Conn, e.At, "session ended: "+e.Reason, []int{i}, nil)
			l.Marks = append(l.Marks, backendMark{Conn: e.Conn, What: "session ended: " + e.Reason, At: e.At, Event: i})
		}
	case event.DBConnReset:
		if l != nil {
			l.Marks = append(l.Marks, backendMark{Conn: e.Conn, What: "reset: " + e.Reason, At: e.At, Event: i})
		}
	case event.DBKeepaliveFailed:
		if l != nil {
			l.Marks = append(l.Marks, backendMark{Conn: e.Conn, What: fmt.Sprintf("keepalive %d/%d unanswered", e.Count, e.Total), At: e.At, Event: i})
		}
	case event.DBServerCrashed:
		for _, bl := range r.lines {
			if bl.Server == e.Node {
				r.end(bl.Conn, e.At, "server crashed", []int{i}, nil)
				bl.Marks = append(bl.Marks, backendMark{Conn: bl.Conn, What: "server crashed", At: e.At, Event: i})
			}
		}
	}
}

// released reads a server's release (event i) on backend l. A release of
// one key balances one grant; the key "all" is a statement that frees
// every session-level lock of the backend at once — PostgreSQL's
// DISCARD ALL and pg_advisory_unlock_all, MySQL's RELEASE_ALL_LOCKS and
// COM_RESET_CONNECTION (sim/pgnode/codec.go, sim/mysqlnode/codec.go) —
// however often each was granted; a transaction-level lock stays with its
// transaction.
func (r *backendReader) released(l *backendLine, i int) {
	e := r.events[i]
	if l == nil {
		return
	}
	why, ids := r.releaseCause(i)
	if e.Key == "all" {
		r.end(e.Conn, e.At, why, ids, isXact)
		return
	}
	h := r.open[e.Conn+"|"+e.Key]
	if h == nil {
		return
	}
	h.Releases++
	h.Events = append(h.Events, i)
	if h.Releases >= h.Grants {
		h.To, h.End = e.At, why
		l.Holds = append(l.Holds, *h)
		delete(r.open, e.Conn+"|"+e.Key)
	}
}

// releaseCause is what freed the lock at release i, with the events that
// say so (the release last): an unlock the client sent is "released"; SQL
// Server frees a transaction's application locks at its COMMIT or
// ROLLBACK and a session's at the connection reset a pooled request
// carries (sim/mssqlnode/facts.go); a pooler's reset query — PgBouncer's
// server_reset_query, DISCARD ALL, run when the pooler said it resets
// the backend (its db.pool.mapped "reset") — frees them all.
func (r *backendReader) releaseCause(i int) (string, []int) {
	e := r.events[i]
	switch {
	case e.Op == "COMMIT" || e.Op == "ROLLBACK":
		return "freed by " + e.Op, []int{i}
	case e.Op == "sp_reset_connection" || e.Op == "RESET":
		return "freed by the connection reset", []int{i}
	case e.Key != "all":
		return "released", []int{i}
	}
	if p, ok := r.lastPool[e.Conn]; ok && r.events[p].Reason == "reset" {
		return fmt.Sprintf("freed by the pooler's reset (%s)", e.Op), []int{p, i}
	}
	return "freed by " + e.Op, []int{i}
}

// grantsLast is the order deriveBackends reads the events in: the log's,
// with a lock grant after the other events of its instant. The trace
// orders one instant's events by their text (sim/trace.go), and a server
// that releases a session's locks and grants one again at once — a
// request with SQL Server's reset-connection flag runs
// sp_reset_connection before its statement (sim/mssqlnode/facts.go) —
// released first.
func grantsLast(events []event.Event) []int {
	ids := make([]int, len(events))
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, func(a, b int) int {
		if c := cmp.Compare(events[a].At, events[b].At); c != 0 {
			return c
		}
		return cmp.Compare(b2i(events[a].Kind == event.DBLockGranted), b2i(events[b].Kind == event.DBLockGranted))
	})
	return ids
}

// finishBackends closes the holds still open at the end of the run (To -1:
// the run's end) and keeps the backends with something to draw.
func finishBackends(lines []*backendLine, open map[string]*backendHold, byConn map[string]*backendLine) []*backendLine {
	for _, k := range sortedKeysOf(open) {
		h := open[k]
		h.End = "end of run"
		h.To = -1
		byConn[h.Conn].Holds = append(byConn[h.Conn].Holds, *h)
	}
	out := lines[:0]
	for _, l := range lines {
		if len(l.Holds) > 0 || len(l.Marks) > 0 || len(l.Maps) > 0 {
			slices.SortStableFunc(l.Holds, func(a, b backendHold) int { return int(a.From - b.From) })
			out = append(out, l)
		}
	}
	return out
}

func sortedKeysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// unheld is how much of [from, to] no client's hold covers.
func unheld(res *runner.Result, from, to time.Duration) time.Duration {
	var ivs []checker.Interval
	for _, iv := range res.History.Intervals {
		if iv.End > from && iv.Start < to {
			ivs = append(ivs, iv)
		}
	}
	slices.SortFunc(ivs, func(a, b checker.Interval) int { return int(a.Start - b.Start) })
	gap, at := time.Duration(0), from
	for _, iv := range ivs {
		if iv.Start > at {
			gap += iv.Start - at
		}
		at = max(at, iv.End)
	}
	if at < to {
		gap += to - at
	}
	return gap
}

// backendName is a backend's name on its line: the connection without its
// server when the run has one server.
func backendName(l *backendLine, servers int) string {
	if servers > 1 {
		return l.Conn
	}
	name, _, _ := strings.Cut(l.Conn, ">")
	return name
}

// backendTop is where the first backend line starts in its row: below the
// row's name and subtitle, which sit at the row's top on the left.
const backendTop = 30.0

// drawBackends draws the backend lines in row r.
func (b *tlBuilder) drawBackends(r row) {
	t := b.t
	servers := map[string]bool{}
	for _, l := range b.backends {
		servers[l.Server] = true
	}
	for i, l := range b.backends {
		y := r.y + backendTop + subLineH*float64(i)
		name := backendName(l, len(servers))
		t.Over = append(t.Over, shape{Kind: "text", X: t.X0 - 8, Y: y + 11, Text: name, Size: 11, Fill: b.ownerColor(l.Owner), Weight: "700", Anchor: "end",
			Title: fmt.Sprintf("backend %s: %s's connection to %s", l.Conn, l.Owner, l.Server)})
		b.drawPoolMaps(l, name, y)
		lastEnd := -1e9
		for _, h := range l.Holds {
			to := h.To
			if to < 0 {
				to = b.res.End
			}
			if !b.visible(h.From, to) {
				continue
			}
			x0, x1 := b.xc(h.From), b.xc(to)
			gap := unheld(b.res, h.From, to)
			idle := gap > time.Millisecond
			title := fmt.Sprintf("%s on %s holds %s (%s) from %s to %s (granted %d×, released %d×); ends: %s", name, l.Server, h.Key, h.Op, checker.Sec(h.From), checker.Sec(to), h.Grants, h.Releases, h.End)
			text := name + " holds"
			if h.Grants > 1 {
				text += fmt.Sprintf(" (granted %d×, released %d×)", h.Grants, h.Releases)
			}
			pooled := ""
			if who := uniq(h.For); len(who) > 0 && (len(who) > 1 || who[0] != l.Owner) {
				title += "; granted for " + strings.Join(h.For, ", ") + " (the clients whose statements it ran)"
				pooled = " (granted for " + strings.Join(who, ", ") + ")"
				text += pooled
			}
			if strings.HasPrefix(h.End, "freed by ") {
				text += ", " + h.End // what ended it, when not the client's unlock
			}
			if idle {
				title += fmt.Sprintf("; for %s of it no client holds the lock: the backend keeps it (idle in the pool)", dur(gap))
				text = fmt.Sprintf("held by %s%s, no client holding for %s (idle in the pool)", name, pooled, dur(gap))
			}
			t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: y + 1, W: math.Max(x1-x0, 2), H: 13, Fill: b.ownerColor(l.Owner), Opacity: 0.55, Class: "backend-hold", Title: title,
				Events: eventIDs(h.Events), Label: fmt.Sprintf("backendhold %s %s from=%d to=%d grants=%d releases=%d unheld=%d end=%s for=%s", h.Conn, h.Key, h.From, h.To, h.Grants, h.Releases, gap, url.QueryEscape(h.End), strings.Join(h.For, ","))})
			if w := textWidth(text, 10); x0+3 > lastEnd && x0+3+w < t.X1 && (idle || w+6 < x1-x0) {
				t.Plot = append(t.Plot, shape{Kind: "text", X: x0 + 3, Y: y + 11, Text: text, Size: 10, Fill: "#0f172a", Halo: true, Events: eventIDs(h.Events)})
				lastEnd = x0 + 3 + w
			}
		}
		for _, m := range l.Marks {
			if !b.visible(m.At, m.At) {
				continue
			}
			x := b.x(m.At)
			t.Plot = append(t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fl8 8m0 -8l-8 8", x-4, y+3), Stroke: witnessRed, SW: 2, Fill: "none", Class: "backend-end",
				Title: fmt.Sprintf("%s at %s: %s", name, checker.Sec(m.At), m.What), Events: eventIDs([]int{m.Event}), Label: fmt.Sprintf("backendmark %s %d %s", m.Conn, m.At, url.QueryEscape(m.What))})
			if w := textWidth(m.What, 10); x+7 > lastEnd && x+7+w < t.X1 {
				t.Plot = append(t.Plot, shape{Kind: "text", X: x + 7, Y: y + 11, Text: m.What, Size: 10, Fill: witnessRed, Halo: true, Events: eventIDs([]int{m.Event})})
				lastEnd = x + 7 + w
			}
		}
	}
}

// stmtClient is the client whose statement a backend received at At.
type stmtClient struct {
	At     time.Duration
	Client string
}

// stmtClients: per backend connection, whose statements it ran, in order.
type stmtClients map[string][]stmtClient

// at is the client whose statement conn ran last at or before t (a grant
// and the statement it answers share their instant).
func (sc stmtClients) at(conn string, t time.Duration) string {
	who := ""
	for _, s := range sc[conn] {
		if s.At > t {
			break
		}
		who = s.Client
	}
	return who
}

// uniq keeps the first of each name, in order.
func uniq(names []string) []string {
	var out []string
	for _, n := range names {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
