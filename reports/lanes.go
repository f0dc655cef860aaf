package reports

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
)

// Mechanism lanes: the rows under the clients that show why the lock
// behaved as it did (see mechanism.go for where the data comes from).

const (
	keyBarTop = 5.0  // a Redis node row: the key bar's offset from the row top
	keyBarH   = 18.0 // and its height
	keyRowH   = 30.0 // a node row without a clock drawing
	subLineH  = 17.0 // one client's line in the votes and sessions lanes
)

// mechRows lists the extra rows the mechanism needs, in drawing order.
func (b *tlBuilder) mechRows(clients []string) []rowSpec {
	m := b.mech
	// Above 12 clients the client rows are compact, but the mechanism is
	// still drawn (node keys, replication, the queue, notifications) up
	// to 40 clients; a larger herd draws its clients only, to keep a
	// course page light.
	if m == nil || b.huge {
		return nil
	}
	var out []rowSpec
	if m.Redlock && len(m.Attempts) > 0 {
		who := attemptClients(m, clients)
		if len(who) > 0 && len(who) <= 8 {
			out = append(out, rowSpec{name: "votes", sub: "Redlock quorum", kind: "votes", h: 10 + subLineH*float64(len(who))})
			b.voteClients = who
		}
	}
	if m.ZK && len(m.Sessions) > 0 {
		who := sessionClients(m, clients)
		if len(who) > 0 && len(who) <= 12 {
			out = append(out, rowSpec{name: "sessions", sub: "ZooKeeper session", kind: "sessions", h: 10 + subLineH*float64(len(who))})
			b.sessionClients = who
		}
	}
	if bl := deriveBackends(b.res.Events); len(bl) > 0 && len(bl) <= 12 {
		b.backends = bl
		out = append(out, rowSpec{name: "backends", sub: "database sessions", kind: "backends", h: backendTop + 4 + subLineH*float64(len(bl))})
	}
	if m.ZK && len(m.Znodes) > 0 && len(m.Znodes) <= 14 {
		out = append(out, rowSpec{name: "znodes", sub: "lock queue", kind: "queue", h: 10 + subLineH*float64(len(m.Znodes))})
	}
	return out
}

func attemptClients(m *mechanism, order []string) []string {
	seen := map[string]bool{}
	for _, a := range m.Attempts {
		seen[a.Client] = true
	}
	var out []string
	for _, c := range order {
		if seen[c] {
			out = append(out, c)
		}
	}
	return out
}

func sessionClients(m *mechanism, order []string) []string {
	seen := map[string]bool{}
	for _, s := range m.Sessions {
		seen[s.Client] = true
	}
	var out []string
	for _, c := range order {
		if seen[c] {
			out = append(out, c)
		}
	}
	return out
}

// nodeRowHeight is the height of a Redis node's row: the key lane, plus the
// clock drawing when the node's clock is not true time.
func (b *tlBuilder) nodeRowHeight(name string, trivial bool) float64 {
	if b.mech == nil || b.huge || !b.nodeHasKeys(name) {
		return 40
	}
	if trivial {
		return keyRowH
	}
	return keyRowH + 34
}

func (b *tlBuilder) nodeHasKeys(name string) bool {
	for _, n := range b.mech.Nodes {
		if n == name {
			return true
		}
	}
	return false
}

// drawMechanism draws every mechanism lane.
func (b *tlBuilder) drawMechanism() {
	m := b.mech
	if m == nil || b.huge {
		return
	}
	for _, n := range m.Nodes {
		if r, ok := b.rowOf["node:"+n]; ok {
			b.keyLane(n, r)
		}
	}
	b.fenceIssues()
	b.replication()
	if r, ok := b.rowOf["votes:votes"]; ok {
		b.votes(r)
	}
	if r, ok := b.rowOf["backends:backends"]; ok {
		b.drawBackends(r)
	}
	if r, ok := b.rowOf["sessions:sessions"]; ok {
		b.sessions(r)
	}
	if r, ok := b.rowOf["queue:znodes"]; ok {
		b.queue(r)
	}
	b.notifications()
	b.renewalFailures()
	b.serverRoles()
}

var roleColors = map[string]string{
	"leader":      "#c7d2fe",
	"follower":    "#bbf7d0",
	"not serving": "#fde68a",
	"crashed":     "#fecaca",
}

// serverRoles draws an ensemble server's role along the bottom of its row:
// who leads, who follows and serves, who has stopped serving for want of a
// quorum, who is down. The clock keeps the middle of the row.
func (b *tlBuilder) serverRoles() {
	t := b.t
	for _, s := range b.mech.Servers {
		r, ok := b.rowOf["node:"+s.Server]
		if !ok || !b.visible(s.From, s.To) {
			continue
		}
		x0, x1 := b.x(max(s.From, b.from)), b.x(min(s.To, b.to))
		w := math.Max(x1-x0, 2)
		y := r.y + r.h - 14
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: y, W: w, H: 12, Fill: roleColors[s.State], Stroke: "#94a3b8", SW: 0.5, Class: "role",
			Title: fmt.Sprintf("%s is %s from %s to %s", s.Server, s.State, checker.Sec(s.From), checker.Sec(s.To)),
			Label: fmt.Sprintf("role %s %s %s", s.Server, s.State, checker.Sec(s.From))})
		if boldWidth(s.State, 10)+6 < w {
			t.Plot = append(t.Plot, shape{Kind: "text", X: x0 + 3, Y: y + 10, Text: s.State, Size: 10, Fill: "#0f172a", Weight: "700"})
		}
	}
}

// ownerColor is a key owner's colour; a token no client sent is grey.
func (b *tlBuilder) ownerColor(owner string) string {
	if c, ok := b.color[owner]; ok {
		return c
	}
	return "#64748b"
}

// keyLane draws the lock key on one node: a bar per owner from the write
// that set it to its release, expiry (on the node's clock) or crash.
func (b *tlBuilder) keyLane(node string, r row) {
	t := b.t
	y := r.y + keyBarTop
	if len(b.mech.Keys[node]) == 0 {
		s := shape{Kind: "text", X: t.X0 + 4, Y: y + 13, Text: "no lock key", Size: 10, Fill: "#94a3b8", Label: "nokey " + node}
		if d := b.mech.Structures[node]; d != nil {
			s.Text, s.Fill, s.Events = lockDataText(d), "#475569", eventIDs(d.Events)
			s.Label = "lockdata " + node + " " + strings.Join(d.Names, ",")
		}
		t.Plot = append(t.Plot, s)
	}
	lastEnd := -1e9
	spans := b.mech.Keys[node]
	for i := 0; i < len(spans); i++ {
		k := spans[i]
		if !b.visible(k.From, k.To) {
			continue
		}
		// A run of short-lived keys (failed attempts that set the key and
		// gave it back at once) is drawn as one burst, not hundreds of
		// slivers.
		if j := b.burstEnd(spans, i); j > i+1 {
			// One path of ticks, one per key, and one tooltip for all.
			var d strings.Builder
			for _, q := range spans[i:j] {
				fmt.Fprintf(&d, "M%.1f %.1fv%.0f", b.x(q.From), y+3, keyBarH-6)
			}
			last := spans[j-1]
			t.Plot = append(t.Plot, shape{Kind: "path", D: d.String(), Stroke: "#64748b", SW: 2, Fill: "none", Class: "key-burst",
				Title: fmt.Sprintf("%d short-lived keys on %s from %s to %s: attempts that took the key here and gave it back at once", j-i, node, checker.Sec(k.From), checker.Sec(last.To))})
			i = j - 1
			continue
		}
		x0, x1 := b.x(k.From), b.x(k.To)
		w := math.Max(x1-x0, 2)
		title := fmt.Sprintf("%s holds the key on %s from %s to %s (%s)", k.Owner, node, checker.Sec(k.From), checker.Sec(k.To), keyEndPhrase(k))
		if k.TTL > 0 {
			title += fmt.Sprintf("; TTL %s on %s's clock", dur(k.TTL), node)
		}
		if k.Count > 0 {
			title += fmt.Sprintf("; hold count %d", k.Count)
			if k.MaxCount > k.Count {
				title += fmt.Sprintf(" (%d at most)", k.MaxCount)
			}
		}
		if k.Renewed > 0 {
			title += fmt.Sprintf("; renewed %d times", k.Renewed)
		}
		if k.Replica {
			title += "; arrived by replication"
		}
		fill := b.ownerColor(k.Owner)
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: y, W: w, H: keyBarH, Fill: fill, Opacity: 0.55, Stroke: fill, SW: 1, Class: "key-span", Title: title,
			Label: fmt.Sprintf("key %s %s %s %s %s", node, k.Owner, checker.Sec(k.From), checker.Sec(k.To), k.End)})
		// A key that expired before its nominal TTL: the node's clock ran
		// ahead. Draw the rest of the nominal lease as an outline, so the
		// bar visibly snaps short.
		if k.End == "expired" && k.Nominal > k.To+time.Millisecond {
			nx := b.x(k.Nominal)
			t.Plot = append(t.Plot, shape{Kind: "rect", X: x1, Y: y + 2, W: math.Max(nx-x1, 1), H: keyBarH - 4, Fill: "none", Stroke: fill, SW: 1, Dash: "3 3", Class: "key-nominal",
				Title: fmt.Sprintf("where %s's key would have expired with a true clock (%s): %s's clock ran ahead", k.Owner, checker.Sec(k.Nominal), node)})
			msg := fmt.Sprintf("expired early (%s ahead)", dur(k.Nominal-k.To))
			if x1+6+textWidth(msg, 10) < math.Min(nx, t.X1) {
				t.Plot = append(t.Plot, shape{Kind: "text", X: x1 + 6, Y: y + 13, Text: msg, Size: 10, Fill: "#be123c", Weight: "700"})
			}
		}
		label := k.Owner + "'s key"
		if k.TTL > 0 {
			label += " · TTL " + dur(k.TTL)
		} else {
			label += " · no TTL"
		}
		if k.MaxCount > 1 {
			label += fmt.Sprintf(" · count up to %d", k.MaxCount)
		} else if k.Count == 1 && k.End == "expired" {
			label += " · count 1"
		}
		if k.Renewed > 0 {
			label += fmt.Sprintf(" · renewed %d×", k.Renewed)
		}
		vis0, vis1 := math.Max(x0, t.X0), math.Min(x0+w, t.X1)
		if vis0 > lastEnd && boldWidth(label, 10)+8 < vis1-vis0 {
			t.Plot = append(t.Plot, shape{Kind: "text", X: vis0 + 4, Y: y + 13, Text: label, Size: 10, Fill: "#0f172a", Weight: "700"})
			lastEnd = vis1
		}
		b.renewalTicks(node, k, y)
		if k.End == "expired" || k.End == "crash" {
			mark := "expires"
			if k.End == "crash" {
				mark = "lost in crash"
			}
			t.Plot = append(t.Plot, shape{Kind: "line", X: x1, Y: y - 2, X2: x1, Y2: y + keyBarH + 2, Stroke: "#0f172a", SW: 1.5, Title: fmt.Sprintf("%s's key %s on %s at %s", k.Owner, mark, node, checker.Sec(k.To))})
		}
	}
	b.refusedRenewals(node, y)
}

// refusedRenewals marks each renewal the node refused, on the node's lane
// at the instant it ran: a red cross in the renewer's colour ring, with
// whose key the node held then.
func (b *tlBuilder) refusedRenewals(node string, y float64) {
	for _, r := range b.mech.Refusals {
		if r.Node != node || r.At < b.from || r.At > b.to {
			continue
		}
		holder := "no key"
		for _, k := range b.mech.Keys[node] {
			if k.From <= r.At && r.At < k.To {
				holder = k.Owner + "'s key"
			}
		}
		x := b.x(r.At)
		who := r.Client
		if who == "" {
			who = "a client"
		}
		b.t.Plot = append(b.t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fl8 8m0 -8l-8 8", x-4, y+keyBarH/2-4), Stroke: witnessRed, SW: 2.2, Fill: "none", Class: "key-renewal-refused",
			Title: fmt.Sprintf("%s's renewal refused by %s at %s: the node held %s, not %s's token", who, node, checker.Sec(r.At), holder, who),
			Label: fmt.Sprintf("renewal refused %s %s %s", node, who, checker.Sec(r.At))})
		txt := "renewal refused"
		if x+7+boldWidth(txt, 10) < b.t.X1 {
			b.t.Plot = append(b.t.Plot, shape{Kind: "text", X: x + 7, Y: y - 3, Text: txt, Size: 10, Fill: witnessRed, Weight: "700", Halo: true})
		}
	}
}

// renewalTicks draws each renewal of a key (a watchdog's or a client's
// compare-and-pexpire that the node granted) as a tick on its bar: one
// path and one tooltip for all of them.
func (b *tlBuilder) renewalTicks(node string, k keySpan, y float64) {
	var d strings.Builder
	n := 0
	for _, at := range k.Renewals {
		if at < b.from || at > b.to {
			continue
		}
		fmt.Fprintf(&d, "M%.1f %.1fv%.0f", b.x(at), y+keyBarH-6, 6.0)
		n++
	}
	if n == 0 {
		return
	}
	b.t.Plot = append(b.t.Plot, shape{Kind: "path", D: d.String(), Stroke: "#0f172a", SW: 1, Fill: "none", Class: "key-renewal",
		Title: fmt.Sprintf("%d renewals of %s's key on %s granted by the node (%d in view)", len(k.Renewals), k.Owner, node, n)})
}

// burstEnd returns the end (exclusive) of a run of consecutive key spans
// starting at i that are each under 3 px wide (too short to label); i+1
// when there is no such run.
func (b *tlBuilder) burstEnd(spans []keySpan, i int) int {
	short := func(k keySpan) bool { return b.x(k.To)-b.x(k.From) < 3 && b.visible(k.From, k.To) }
	if !short(spans[i]) {
		return i + 1
	}
	j := i + 1
	for j < len(spans) && short(spans[j]) {
		j++
	}
	return j
}

func keyEndPhrase(k keySpan) string {
	switch k.End {
	case "released":
		return "released"
	case "expired":
		return "expired on the node's clock"
	case "crash":
		return "lost when the node crashed"
	case "overwritten":
		return "overwritten"
	case "full sync":
		return "replaced by a full sync from the master"
	}
	return "still there at the end"
}

// fenceIssues marks each INCR of the fencing counter on its node.
func (b *tlBuilder) fenceIssues() {
	t := b.t
	for _, f := range b.mech.Fences {
		r, ok := b.rowOf["node:"+f.Node]
		if !ok || f.At < b.from || f.At > b.to {
			continue
		}
		x, y := b.x(f.At), r.y+keyBarTop+keyBarH+1
		t.Plot = append(t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fl4 5l-8 0z", x, y), Fill: "#0f172a",
			Title: fmt.Sprintf("%s issues fencing token %d at %s", f.Node, f.Token, checker.Sec(f.At))})
	}
	// Labels: one per token value, where there is room.
	last := map[string]float64{}
	for _, f := range b.mech.Fences {
		r, ok := b.rowOf["node:"+f.Node]
		if !ok || f.At < b.from || f.At > b.to {
			continue
		}
		x := b.x(f.At)
		txt := fmt.Sprintf("token %d", f.Token)
		if l, ok := last[f.Node]; ok && x-l < textWidth(txt, 10)+12 {
			continue
		}
		t.Plot = append(t.Plot, shape{Kind: "text", X: x + 5, Y: r.y + r.h - 3, Text: txt, Size: 10, Fill: "#0f172a", Weight: "700", Halo: true})
		last[f.Node] = x
	}
}

// replication draws the stream from a master to its replicas: an arrow
// per write from the master's row (when it ran) to the replica's row (when
// it arrived), a cross where it was lost, and the promotion.
func (b *tlBuilder) replication() {
	t := b.t
	lost := map[[2]string]*lostRun{}
	var lostOrder [][2]string
	// Many effects between the same two nodes (an old master catching up
	// after it rejoins) are drawn as one path with one tooltip.
	perPair := map[[2]string]int{}
	for _, ev := range b.mech.Repl {
		if !ev.Lost && b.visible(ev.Sent, ev.Arrived) {
			perPair[[2]string{ev.From, ev.To}]++
		}
	}
	applied := map[[2]string]*lostRun{}
	var appliedOrder [][2]string
	for _, ev := range b.mech.Repl {
		rf, ok1 := b.rowOf["node:"+ev.From]
		rt, ok2 := b.rowOf["node:"+ev.To]
		if !ok1 || !ok2 || !b.visible(ev.Sent, ev.Arrived) {
			continue
		}
		sent := ev.Arrived
		if ev.HasSent {
			sent = ev.Sent
		}
		x0, x1 := b.x(sent), b.x(ev.Arrived)
		y0, y1 := rf.y+keyBarTop+keyBarH/2, rt.y+keyBarTop+keyBarH/2
		title := fmt.Sprintf("replication %s → %s: %s, sent %s", ev.From, ev.To, ev.Summary, checker.Sec(sent))
		if ev.Lost {
			// Lost effects between two nodes are drawn as one path and
			// one tooltip: a partition loses hundreds.
			k := [2]string{ev.From, ev.To}
			r := lost[k]
			if r == nil {
				r = &lostRun{first: ev, x: x1, y: (y0 + y1) / 2}
				lost[k] = r
				lostOrder = append(lostOrder, k)
			}
			ym := (y0 + y1) / 2
			fmt.Fprintf(&r.d, "M%.1f %.1fL%.1f %.1fM%.1f %.1fl8 8M%.1f %.1fl-8 8", x0, y0, x1, ym, x1-4, ym-4, x1+4, ym-4)
			r.n++
			r.last = ev
			continue
		}
		if k := [2]string{ev.From, ev.To}; perPair[k] > 12 {
			r := applied[k]
			if r == nil {
				r = &lostRun{first: ev}
				applied[k] = r
				appliedOrder = append(appliedOrder, k)
			}
			fmt.Fprintf(&r.d, "M%.1f %.1fL%.1f %.1f", x0, y0, x1, y1)
			r.n++
			r.last = ev
			continue
		}
		title += fmt.Sprintf(", applied %s (lag %s)", checker.Sec(ev.Arrived), dur(ev.Arrived-sent))
		t.Plot = append(t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fL%.1f %.1f", x0, y0, x1, y1), Stroke: "#0f766e", SW: 1.3, Fill: "none", Class: "repl", Title: title})
		t.Plot = append(t.Plot, shape{Kind: "circle", X: x1, Y: y1, R: 2.5, Fill: "#0f766e", Title: title})
	}
	for _, k := range appliedOrder {
		r := applied[k]
		t.Plot = append(t.Plot, shape{Kind: "path", D: r.d.String(), Stroke: "#0f766e", SW: 1.3, Fill: "none", Class: "repl",
			Title: fmt.Sprintf("%d replications %s → %s applied from %s to %s, the first %s", r.n, k[0], k[1], checker.Sec(r.first.Arrived), checker.Sec(r.last.Arrived), r.first.Summary)})
	}
	for _, k := range lostOrder {
		r := lost[k]
		title := fmt.Sprintf("replication %s → %s: %s, lost (%s) at %s", k[0], k[1], r.first.Summary, r.first.Why, checker.Sec(r.first.Arrived))
		if r.n > 1 {
			title = fmt.Sprintf("%d replications %s → %s lost from %s to %s, the first %s (%s)", r.n, k[0], k[1], checker.Sec(r.first.Arrived), checker.Sec(r.last.Arrived), r.first.Summary, r.first.Why)
		}
		t.Plot = append(t.Plot, shape{Kind: "path", D: r.d.String(), Stroke: witnessRed, SW: 1.5, Dash: "4 3", Fill: "none", Class: "repl-lost", Title: title})
		label := "replication lost"
		if r.n > 1 {
			label = fmt.Sprintf("%d replications lost", r.n)
		}
		t.Plot = append(t.Plot, shape{Kind: "text", X: r.x + 9, Y: r.y + 4, Text: label, Size: 10, Fill: witnessRed, Weight: "700", Halo: true})
	}
	for _, p := range b.mech.Promotions {
		r, ok := b.rowOf["node:"+p.Node]
		if !ok || p.At < b.from || p.At > b.to {
			continue
		}
		x := b.x(p.At)
		title := fmt.Sprintf("failover at %s: %s promoted to master in place of %s", checker.Sec(p.At), p.Node, p.Old)
		t.Plot = append(t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fl6 9l-12 0z", x, r.y+2), Fill: "#7c2d12", Title: title, Class: "promotion"})
		t.Plot = append(t.Plot, shape{Kind: "text", X: x + 8, Y: r.y + r.h - 4, Text: "promoted to master", Size: 10, Fill: "#7c2d12", Weight: "700", Halo: true})
	}
}

// lostRun gathers the lost replications from one node to another.
type lostRun struct {
	d           strings.Builder
	n           int
	first, last replEvent
	x, y        float64 // where the first was lost
}

var sessionColors = map[string]string{
	"CONNECTED":   "#bbf7d0",
	"RECONNECTED": "#bbf7d0",
	"SUSPENDED":   "#fde68a",
	"LOST":        "#fecaca",
	"EXPIRED":     "#fecaca",
	"CLOSED":      "#e2e8f0",
	// The ensemble's go-zookeeper client: between connections.
	"DISCONNECTED": "#fde68a",
}

// sessionColor is the fill of a connection state; an ensemble client's
// "CONNECTED zk2" names the server it is connected to.
func sessionColor(state string) string {
	st, _, _ := strings.Cut(state, " ")
	return sessionColors[st]
}

// isConnected reports whether a state is a healthy connection.
func isConnected(state string) bool {
	return state == "CONNECTED" || strings.HasPrefix(state, "CONNECTED ")
}

// sessions draws each client's ZooKeeper connection state, and where the
// server expired the session.
func (b *tlBuilder) sessions(r row) {
	t := b.t
	line := map[string]float64{}
	for i, c := range b.sessionClients {
		line[c] = r.y + 6 + subLineH*float64(i)
		t.Over = append(t.Over, shape{Kind: "text", X: t.X0 - 8, Y: line[c] + 11, Text: c, Size: 10, Fill: b.color[c], Weight: "700", Anchor: "end"})
	}
	// State labels of one client that would overlap join the previous one
	// ("SUSPENDED → LOST").
	lastLabel := map[string]int{} // index in t.Over: labels sit above every bar
	stateWidth := func(s string) float64 { return boldWidth(s, 10) * 1.2 }
	for _, s := range b.mech.Sessions {
		y, ok := line[s.Client]
		if !ok || !b.visible(s.From, s.To) {
			continue
		}
		if i, ok := lastLabel[s.Client]; ok && !isConnected(s.State) {
			prev := &t.Over[i]
			if b.x(s.From)+3 < prev.X+stateWidth(prev.Text)+4 {
				prev.Text += " → " + s.State
				if w := stateWidth(prev.Text); prev.X+w > t.X1 {
					prev.X = t.X1 - w - 2
				}
				fill := sessionColor(s.State)
				x0 := b.x(s.From)
				t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: y + 1, W: math.Max(b.x(s.To)-x0, 2), H: 13, Fill: fill, Stroke: "#94a3b8", SW: 0.5, Class: "session",
					Title: fmt.Sprintf("%s's session is %s from %s to %s", s.Client, s.State, checker.Sec(s.From), checker.Sec(s.To)),
					Label: fmt.Sprintf("session %s %s %s", s.Client, s.State, checker.Sec(s.From))})
				continue
			}
		}
		fill := sessionColor(s.State)
		if fill == "" {
			fill = "#e2e8f0"
		}
		x0, x1 := b.x(s.From), b.x(s.To)
		w := math.Max(x1-x0, 2)
		title := fmt.Sprintf("%s's session is %s from %s to %s", s.Client, s.State, checker.Sec(s.From), checker.Sec(s.To))
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: y + 1, W: w, H: 13, Fill: fill, Stroke: "#94a3b8", SW: 0.5, Class: "session", Title: title,
			Label: fmt.Sprintf("session %s %s %s", s.Client, s.State, checker.Sec(s.From))})
		// An ensemble client's "CONNECTED zk2" is labelled wherever it fits:
		// which server it talks to is the point of the lane.
		if !isConnected(s.State) || x0 <= t.X0+1 || s.State != "CONNECTED" {
			lx := math.Max(x0, t.X0) + 3
			if !isConnected(s.State) && lx+boldWidth(s.State, 10)*1.2 > t.X1 {
				lx = t.X1 - boldWidth(s.State, 10)*1.2 - 2
			}
			if !isConnected(s.State) || w > boldWidth(s.State, 10)+6 {
				t.Over = append(t.Over, shape{Kind: "text", X: lx, Y: y + 11, Text: s.State, Size: 10, Fill: "#0f172a", Weight: "700", Halo: !isConnected(s.State)})
				if !isConnected(s.State) {
					lastLabel[s.Client] = len(t.Over) - 1
				}
			}
		}
	}
	for _, e := range b.mech.Expiries {
		y, ok := line[e.Client]
		if !ok || e.At < b.from || e.At > b.to {
			continue
		}
		x := b.x(e.At)
		title := fmt.Sprintf("the server expires %s's session at %s: its ephemeral nodes are deleted, though %s does not know yet", e.Client, checker.Sec(e.At), e.Client)
		b.cross(x, y+7, 5, witnessRed, title)
		txt := "server expires the session"
		if x+9+textWidth(txt, 10) < t.X1 {
			t.Plot = append(t.Plot, shape{Kind: "text", X: x + 9, Y: y + 11, Text: txt, Size: 10, Fill: witnessRed, Weight: "700", Halo: true})
		}
	}
}

// queue draws the lock znodes, one line each by sequence number, coloured
// by the client that created them.
func (b *tlBuilder) queue(r row) {
	t := b.t
	for i, z := range b.mech.Znodes {
		y := r.y + 6 + subLineH*float64(i)
		t.Over = append(t.Over, shape{Kind: "text", X: t.X0 - 8, Y: y + 11, Text: "#" + z.Short, Size: 10, Fill: "#334155", Weight: "700", Anchor: "end"})
		if !b.visible(z.From, z.To) {
			continue
		}
		fill := b.ownerColor(z.Owner)
		x0, x1 := b.x(z.From), b.x(z.To)
		w := math.Max(x1-x0, 2)
		title := fmt.Sprintf("znode %s created by %s at %s, %s at %s", z.Path, z.Owner, checker.Sec(z.From), z.End, checker.Sec(z.To))
		dash := ""
		if z.Untold {
			// The server made the node; its owner never heard.
			title = fmt.Sprintf("znode %s created for %s at %s, whose reply %s never got; %s at %s", z.Path, z.Owner, checker.Sec(z.From), z.Owner, z.End, checker.Sec(z.To))
			dash = "4 2"
		}
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: y + 1, W: w, H: 13, Fill: fill, Opacity: 0.45, Stroke: fill, SW: 1, Dash: dash, Class: "znode", Title: title,
			Label: fmt.Sprintf("znode %s %s %s %s", z.Short, z.Owner, checker.Sec(z.From), z.End)})
		label := fmt.Sprintf("%s's node", z.Owner)
		if z.Untold {
			label += " · reply never came"
		}
		if z.End == "session expired" {
			label += " · deleted with the session"
		}
		if boldWidth(label, 10)+6 < math.Min(x0+w, t.X1)-math.Max(x0, t.X0) {
			t.Plot = append(t.Plot, shape{Kind: "text", X: math.Max(x0, t.X0) + 3, Y: y + 11, Text: label, Size: 10, Fill: "#0f172a", Weight: "700"})
		}
		if z.Adopted && z.AdoptedAt >= b.from && z.AdoptedAt <= b.to {
			// CURATOR-604: a hold begun on a node another session made.
			xa := b.x(z.AdoptedAt)
			t.Plot = append(t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fl5 7l-5 7l-5 -7z", xa, y), Fill: witnessRed, Stroke: "#ffffff", SW: 1, Class: "znode-adopted",
				Title: fmt.Sprintf("%s adopts node %s at %s in its new session %s: the node belongs to the old session, which the ensemble will expire", z.Owner, z.Short, checker.Sec(z.AdoptedAt), z.AdoptedIn),
				Label: fmt.Sprintf("adopted %s %s %s", z.Short, z.Owner, checker.Sec(z.AdoptedAt))})
			txt := fmt.Sprintf("adopted by %s's new session", z.Owner)
			if xa+8+boldWidth(txt, 10) < t.X1 {
				t.Plot = append(t.Plot, shape{Kind: "text", X: xa + 8, Y: y + 11, Text: txt, Size: 10, Fill: witnessRed, Weight: "700", Halo: true})
			}
		}
	}
}

// renewalFailures marks, on the client's lane, each background renewal of
// its lease that failed: the watchdog gave up there, and unless the client
// learned it (a HoldLost), it works on as holder.
func (b *tlBuilder) renewalFailures() {
	t := b.t
	for _, f := range b.mech.RenewFails {
		r, ok := b.rowOf[f.Client]
		if !ok || f.At < b.from || f.At > b.to {
			continue
		}
		x, y := b.x(f.At), r.y+4
		t.Plot = append(t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fl8 8m0 -8l-8 8", x-4, y), Stroke: witnessRed, SW: 2.2, Fill: "none", Class: "renewal-failed",
			Title: fmt.Sprintf("%s's renewal of its lease failed at %s (%s): the renewal stops", f.Client, checker.Sec(f.At), f.Reason),
			Label: fmt.Sprintf("renewal failed %s %s", f.Client, checker.Sec(f.At))})
		txt := "renewal failed"
		if x+7+boldWidth(txt, 10) < t.X1 {
			t.Plot = append(t.Plot, shape{Kind: "text", X: x + 7, Y: y + 8, Text: txt, Size: 10, Fill: witnessRed, Weight: "700", Halo: true})
		}
	}
}

// notifications marks each watch notification on the client that got it.
func (b *tlBuilder) notifications() {
	t := b.t
	if b.dense {
		b.herdNotifications()
		return
	}
	for _, n := range b.mech.Notifies {
		r, ok := b.rowOf[n.Client]
		if !ok || n.At < b.from || n.At > b.to {
			continue
		}
		x := b.x(n.At)
		t.Plot = append(t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fl5 -8l-10 0z", x, r.y+14), Fill: "#0e7490", Class: "notify",
			Title: fmt.Sprintf("watch notification to %s at %s: %s", n.Client, checker.Sec(n.At), n.Event)})
	}
}

// herdNotifications is the compact herd view above 12 clients: each
// client's watch notifications are one path of small marks on its row with
// one tooltip that counts them, so a herd of hundreds stays light.
func (b *tlBuilder) herdNotifications() {
	type marks struct {
		d           strings.Builder
		n           int
		first, last time.Duration
	}
	per := map[string]*marks{}
	var order []string
	for _, n := range b.mech.Notifies {
		r, ok := b.rowOf[n.Client]
		if !ok || n.At < b.from || n.At > b.to {
			continue
		}
		mk := per[n.Client]
		if mk == nil {
			mk = &marks{first: n.At}
			per[n.Client] = mk
			order = append(order, n.Client)
		}
		fmt.Fprintf(&mk.d, "M%.1f %.1fl3 -5l-6 0z", b.x(n.At), r.y+10)
		mk.n++
		mk.last = n.At
	}
	for _, c := range order {
		mk := per[c]
		b.t.Plot = append(b.t.Plot, shape{Kind: "path", D: mk.d.String(), Fill: "#0e7490", Class: "notify",
			Title: fmt.Sprintf("%d watch notifications to %s from %s to %s", mk.n, c, checker.Sec(mk.first), checker.Sec(mk.last))})
	}
}

// fenceLabel is how the store row labels a fenced write: the comparison
// the store made, with the highest token it had seen then (Access.Highest,
// which counts reads too), never a reconstruction.
func fenceLabel(a checker.Access) string {
	switch {
	case a.Fence == 0:
		return ""
	case a.Accepted && a.Highest == 0:
		return fmt.Sprintf("token %d ✓", a.Fence)
	case a.Accepted:
		return fmt.Sprintf("%d ≥ %d ✓", a.Fence, a.Highest)
	case a.Fence < a.Highest:
		return fmt.Sprintf("%d < %d ✗", a.Fence, a.Highest)
	default:
		// Not lower, yet refused: under the strict rule the token has
		// already written once.
		return fmt.Sprintf("%d already used ✗", a.Fence)
	}
}

// mechLegend explains the mechanism lanes this timeline draws.
func (b *tlBuilder) mechLegend() []legendItem {
	m := b.mech
	if m == nil || b.huge {
		return nil
	}
	var out []legendItem
	if m.hasRedis() {
		out = append(out, legendItem{Swatch: "sw-key", Text: "lock key on a node, in its owner's colour, until released, expired on the node's own clock, or lost"},
			legendItem{Swatch: "sw-nominal", Text: "the rest of a TTL the key lost to a clock that ran ahead"})
	}
	if len(m.RenewFails) > 0 {
		out = append(out, legendItem{Swatch: "sw-reject", Text: "a background renewal of the client's lease that failed (on the client's lane)"})
	}
	if len(m.Refusals) > 0 {
		out = append(out, legendItem{Swatch: "sw-reject", Text: "a renewal the node refused (the key did not hold the renewer's token)"})
	}
	if len(b.voteClients) > 0 {
		out = append(out, legendItem{Swatch: "sw-validity", Text: "Redlock attempt (tick: votes counted) and the validity window the client computed"})
	}
	if len(m.Repl) > 0 {
		out = append(out, legendItem{Swatch: "sw-repl", Text: "replication of a write from master to replica (dashed and crossed: lost)"})
	}
	if len(b.sessionClients) > 0 {
		if b.ensembleSessions() {
			out = append(out, legendItem{Swatch: "sw-session-ok", Text: "connected to a server (named)"}, legendItem{Swatch: "sw-session-suspended", Text: "DISCONNECTED; SUSPENDED (link cut)"},
				legendItem{Swatch: "sw-session-lost", Text: "LOST (session expired); EXPIRED (refused)"})
		} else {
			out = append(out, legendItem{Swatch: "sw-session-ok", Text: "session CONNECTED"}, legendItem{Swatch: "sw-session-suspended", Text: "SUSPENDED"}, legendItem{Swatch: "sw-session-lost", Text: "LOST"})
		}
	}
	if len(b.backends) > 0 {
		out = append(out, legendItem{Swatch: "sw-key", Text: "a lock the database server granted a backend (a server session), until released, committed, or the session ended (✗, with why)"})
	}
	if len(m.Notifies) > 0 {
		out = append(out, legendItem{Swatch: "sw-notify", Text: "watch notification"})
	}
	for _, z := range m.Znodes {
		if z.Untold || z.Adopted {
			out = append(out, legendItem{Swatch: "sw-znode-untold", Text: "lock znode whose create's reply never reached its owner (dashed); ◆ adopted by the owner's new session"})
			break
		}
	}
	if len(m.Servers) > 0 {
		out = append(out, legendItem{Swatch: "sw-role-leader", Text: "server leads"}, legendItem{Swatch: "sw-session-ok", Text: "follows and serves"},
			legendItem{Swatch: "sw-session-suspended", Text: "not serving (no quorum)"}, legendItem{Swatch: "sw-session-lost", Text: "crashed"})
	}
	return out
}

// dropCollidingLabels removes plot labels that would be drawn over another
// label: the more important one stays (red and bold first, then bold, then
// the rest; among equals the one drawn first). Every shape keeps its
// tooltip, so nothing is lost but clutter.
func (b *tlBuilder) dropCollidingLabels() {
	t := b.t
	type box struct{ x0, y0, x1, y1 float64 }
	boxOf := func(s shape) box {
		w := textWidth(s.Text, s.Size)
		if s.Weight != "" {
			w = boldWidth(s.Text, s.Size)
		}
		w *= 1.08
		x0 := s.X
		switch s.Anchor {
		case "end":
			x0 = s.X - w
		case "middle":
			x0 = s.X - w/2
		}
		return box{x0, s.Y - s.Size*0.8, x0 + w, s.Y + s.Size*0.25}
	}
	rank := func(s shape) int {
		r := 0
		if s.Weight != "" {
			r++
		}
		switch s.Fill {
		case witnessRed, "#be123c", "#7c2d12", faultAmber:
			r += 2
		}
		return r
	}
	type ref struct {
		layer *[]shape
		i     int
	}
	var texts []ref
	for _, layer := range []*[]shape{&t.Back, &t.Plot} {
		for i, s := range *layer {
			if s.Kind == "text" && s.Text != "" {
				texts = append(texts, ref{layer, i})
			}
		}
	}
	sort.SliceStable(texts, func(i, j int) bool {
		return rank((*texts[i].layer)[texts[i].i]) > rank((*texts[j].layer)[texts[j].i])
	})
	var kept []box
	drop := map[*[]shape]map[int]bool{}
	for _, r := range texts {
		bx := boxOf((*r.layer)[r.i])
		clash := false
		for _, k := range kept {
			if min(bx.x1, k.x1)-max(bx.x0, k.x0) > 1 && min(bx.y1, k.y1)-max(bx.y0, k.y0) > 2 {
				clash = true
				break
			}
		}
		if clash {
			if drop[r.layer] == nil {
				drop[r.layer] = map[int]bool{}
			}
			drop[r.layer][r.i] = true
			continue
		}
		kept = append(kept, bx)
	}
	for layer, idx := range drop {
		out := (*layer)[:0]
		for i, s := range *layer {
			if !idx[i] {
				out = append(out, s)
			}
		}
		*layer = out
	}
}

// ensembleSessions reports whether the session lane shows an ensemble
// client's connections (states name the server) rather than Curator-style
// states.
func (b *tlBuilder) ensembleSessions() bool {
	for _, s := range b.mech.Sessions {
		if strings.HasPrefix(s.State, "CONNECTED ") || s.State == "DISCONNECTED" {
			return true
		}
	}
	return false
}
