package reports

import (
	"fmt"
	"sort"
	"strings"

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
	if pl := permitLines(m.Permits); len(pl) > 0 && len(pl) <= 8 {
		b.permitLines = pl
		out = append(out, rowSpec{name: "permits", sub: "semaphore's set", kind: "permits", h: backendTop + 4 + subLineH*float64(len(pl))})
	}
	if rl := rwLines(m.RW); len(rl) > 0 && len(rl) <= 8 {
		b.rwLines = rl
		out = append(out, rowSpec{name: "readers/writer", sub: "the lock's hash", kind: "rw", h: backendTop + 4 + subLineH*float64(len(rl))})
	}
	if bl := deriveBackends(b.res.Events); len(bl) > 0 && len(bl) <= 12 {
		b.backends = bl
		out = append(out, rowSpec{name: "backends", sub: "database sessions", kind: "backends", h: backendTop + 4 + subLineH*float64(len(bl))})
	}
	if m.ZK && len(m.Znodes) > 0 && len(m.Znodes) <= 14 {
		sub := "lock queue"
		if strings.Contains(b.res.Scenario.Algorithm, "semaphore") {
			sub = "semaphore leases" // Curator's lease nodes, one per permit held or wanted
		}
		out = append(out, rowSpec{name: "znodes", sub: sub, kind: "queue", h: 10 + subLineH*float64(len(m.Znodes))})
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
	if r, ok := b.rowOf["rw:readers/writer"]; ok {
		b.drawRW(r)
	}
	if r, ok := b.rowOf["permits:permits"]; ok {
		b.drawPermits(r)
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
				r = &lostRun{first: ev, x: x1, y: y1}
				lost[k] = r
				lostOrder = append(lostOrder, k)
			}
			// The arrow ends, crossed, on the replica it never reached
			// (halfway there put it on the row between, over another
			// node's key).
			fmt.Fprintf(&r.d, "M%.1f %.1fL%.1f %.1fM%.1f %.1fl8 8M%.1f %.1fl-8 8", x0, y0, x1, y1, x1-4, y1-4, x1+4, y1-4)
			r.n++
			r.last = ev
			r.ids = append(r.ids, ev.Event)
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
			r.ids = append(r.ids, ev.Event)
			continue
		}
		ids := []int{ev.Event}
		if ev.HasSent {
			ids = []int{ev.SentEvent, ev.Event}
			title += fmt.Sprintf(", applied %s (lag %s)", checker.Sec(ev.Arrived), dur(ev.Arrived-sent))
		} else {
			title += fmt.Sprintf(", applied %s (the master's write not found: lag unknown)", checker.Sec(ev.Arrived))
		}
		label := fmt.Sprintf("repl %s %s arrived=%d sent=%d known=%v", ev.From, ev.To, ev.Arrived, sent, ev.HasSent)
		t.Plot = append(t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fL%.1f %.1f", x0, y0, x1, y1), Stroke: "#0f766e", SW: 1.3, Fill: "none", Class: "repl", Title: title, Label: label, Events: eventIDs(ids)})
		t.Plot = append(t.Plot, shape{Kind: "circle", X: x1, Y: y1, R: 2.5, Fill: "#0f766e", Title: title, Events: eventIDs(ids)})
	}
	for _, k := range appliedOrder {
		r := applied[k]
		t.Plot = append(t.Plot, shape{Kind: "path", D: r.d.String(), Stroke: "#0f766e", SW: 1.3, Fill: "none", Class: "repl", Events: eventIDs(r.ids),
			Title: fmt.Sprintf("%d replications %s → %s applied from %s to %s, the first %s", r.n, k[0], k[1], checker.Sec(r.first.Arrived), checker.Sec(r.last.Arrived), r.first.Summary)})
	}
	for _, k := range lostOrder {
		r := lost[k]
		title := fmt.Sprintf("replication %s → %s: %s, lost (%s) at %s", k[0], k[1], r.first.Summary, r.first.Why, checker.Sec(r.first.Arrived))
		if r.n > 1 {
			title = fmt.Sprintf("%d replications %s → %s lost from %s to %s, the first %s (%s)", r.n, k[0], k[1], checker.Sec(r.first.Arrived), checker.Sec(r.last.Arrived), r.first.Summary, r.first.Why)
		}
		t.Plot = append(t.Plot, shape{Kind: "path", D: r.d.String(), Stroke: witnessRed, SW: 1.5, Dash: "4 3", Fill: "none", Class: "repl-lost", Title: title,
			Events: eventIDs(r.ids), Label: fmt.Sprintf("repllost %s %s n=%d", k[0], k[1], r.n)})
		label := "replication to " + k[1] + " lost"
		if r.n > 1 {
			label = fmt.Sprintf("%d replications to %s lost", r.n, k[1])
		}
		t.Plot = append(t.Plot, shape{Kind: "text", X: r.x + 9, Y: r.y + 4, Text: label, Size: 10, Fill: witnessRed, Weight: "700", Halo: true, Events: eventIDs(r.ids)})
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
	ids         []int
	first, last replEvent
	x, y        float64 // where the first was lost
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
			Label: fmt.Sprintf("renewal failed %s %s", f.Client, checker.Sec(f.At)), Events: eventIDs([]int{f.Event})})
		txt := "renewal failed"
		if x+7+boldWidth(txt, 10) < t.X1 {
			t.Plot = append(t.Plot, shape{Kind: "text", X: x + 7, Y: y + 8, Text: txt, Size: 10, Fill: witnessRed, Weight: "700", Halo: true, Events: eventIDs([]int{f.Event})})
		}
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
		out = append(out, legendItem{Swatch: "sw-reject", Text: "a renewal the node refused (the key did not hold the renewer's lock value)"})
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
	if len(b.permitLines) > 0 {
		out = append(out, legendItem{Swatch: "sw-key", Text: "a client's entry in the semaphore's set on the node, from the command or script that added it to its removal (red outline: removed by another client)"})
	}
	if len(b.rwLines) > 0 {
		out = append(out, legendItem{Swatch: "sw-key", Text: "a reader's (lighter) or writer's hold in the lock's hash on the node, until released or the hash expired there"})
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
