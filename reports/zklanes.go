package reports

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
)

// The ZooKeeper lanes: each client's connection state, the lock znode
// queue, watch notifications (a herd's one mark each) and the ensemble
// servers' roles.

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
			Label: fmt.Sprintf("role %s %s %s", s.Server, s.State, checker.Sec(s.From)), Events: eventIDs([]int{s.Event})})
		if boldWidth(s.State, 10)+6 < w {
			t.Plot = append(t.Plot, shape{Kind: "text", X: x0 + 3, Y: y + 10, Text: s.State, Size: 10, Fill: "#0f172a", Weight: "700", Events: eventIDs([]int{s.Event})})
		}
	}
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
					Label: fmt.Sprintf("session %s %s %s", s.Client, s.State, checker.Sec(s.From)), Events: eventIDs([]int{s.Event})})
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
			Label: fmt.Sprintf("session %s %s %s", s.Client, s.State, checker.Sec(s.From)), Events: eventIDs([]int{s.Event})})
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
		ids, label := eventIDs([]int{e.Event}), fmt.Sprintf("expiry %s %s", e.Client, checker.Sec(e.At))
		b.cross(x, y+7, 5, witnessRed, title)
		t.Plot[len(t.Plot)-1].Events, t.Plot[len(t.Plot)-1].Label = ids, label
		txt := "server expires the session"
		if x+9+textWidth(txt, 10) < t.X1 {
			t.Plot = append(t.Plot, shape{Kind: "text", X: x + 9, Y: y + 11, Text: txt, Size: 10, Fill: witnessRed, Weight: "700", Halo: true, Events: ids, Label: label})
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
			Label: fmt.Sprintf("znode %s %s %s %s", z.Short, z.Owner, checker.Sec(z.From), z.End), Events: eventIDs(z.Events)})
		label := fmt.Sprintf("%s's node", z.Owner)
		if z.Untold {
			label += " · reply never came"
		}
		if z.End == "session expired" {
			label += " · deleted with the session"
		}
		if boldWidth(label, 10)+6 < math.Min(x0+w, t.X1)-math.Max(x0, t.X0) {
			t.Plot = append(t.Plot, shape{Kind: "text", X: math.Max(x0, t.X0) + 3, Y: y + 11, Text: label, Size: 10, Fill: "#0f172a", Weight: "700", Events: eventIDs(z.Events)})
		}
		if z.Adopted && z.AdoptedAt >= b.from && z.AdoptedAt <= b.to {
			// CURATOR-604: a hold begun on a node another session made.
			xa := b.x(z.AdoptedAt)
			t.Plot = append(t.Plot, shape{Kind: "path", D: fmt.Sprintf("M%.1f %.1fl5 7l-5 7l-5 -7z", xa, y), Fill: witnessRed, Stroke: "#ffffff", SW: 1, Class: "znode-adopted",
				Title: fmt.Sprintf("%s adopts node %s at %s in its new session %s: the node belongs to the old session, which the ensemble will expire", z.Owner, z.Short, checker.Sec(z.AdoptedAt), z.AdoptedIn),
				Label: fmt.Sprintf("adopted %s %s %s", z.Short, z.Owner, checker.Sec(z.AdoptedAt)), Events: eventIDs([]int{z.AdoptedEvent})})
			txt := fmt.Sprintf("adopted by %s's new session", z.Owner)
			if xa+8+boldWidth(txt, 10) < t.X1 {
				t.Plot = append(t.Plot, shape{Kind: "text", X: xa + 8, Y: y + 11, Text: txt, Size: 10, Fill: witnessRed, Weight: "700", Halo: true})
			}
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
			Title:  fmt.Sprintf("watch notification to %s at %s: %s", n.Client, checker.Sec(n.At), n.Event),
			Events: eventIDs([]int{n.Index}), Label: fmt.Sprintf("notify %s %d", n.Client, n.At)})
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
		ids         []int
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
		mk.ids = append(mk.ids, n.Index)
	}
	for _, c := range order {
		mk := per[c]
		b.t.Plot = append(b.t.Plot, shape{Kind: "path", D: mk.d.String(), Fill: "#0e7490", Class: "notify",
			Title:  fmt.Sprintf("%d watch notifications to %s from %s to %s", mk.n, c, checker.Sec(mk.first), checker.Sec(mk.last)),
			Events: eventIDs(mk.ids), Label: fmt.Sprintf("notifies %s n=%d", c, mk.n)})
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
