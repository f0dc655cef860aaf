package reports

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
)

// A Redis node's key lane: the lock key's bars per owner on the node's own
// clock, the renewals it granted and refused, and the fencing counter's
// issues.

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
		t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: y, W: w, H: keyBarH, Fill: fill, Opacity: 0.55, Stroke: fill, SW: 1, Class: "key-span", Title: title, Events: eventIDs(k.Events),
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
			Title: fmt.Sprintf("%s's renewal refused by %s at %s: the node held %s, not %s's lock value", who, node, checker.Sec(r.At), holder, who),
			Label: fmt.Sprintf("renewal refused %s %s %s", node, who, checker.Sec(r.At)), Events: eventIDs([]int{r.Event})})
		txt := "renewal refused"
		if x+7+boldWidth(txt, 10) < b.t.X1 {
			b.t.Plot = append(b.t.Plot, shape{Kind: "text", X: x + 7, Y: y - 3, Text: txt, Size: 10, Fill: witnessRed, Weight: "700", Halo: true, Events: eventIDs([]int{r.Event})})
		}
	}
}

// renewalTicks draws each renewal of a key (a watchdog's or a client's
// compare-and-pexpire that the node granted) as a tick on its bar: one
// path and one tooltip for all of them.
func (b *tlBuilder) renewalTicks(node string, k keySpan, y float64) {
	var d strings.Builder
	n := 0
	var ids []int
	for i, at := range k.Renewals {
		if at < b.from || at > b.to {
			continue
		}
		fmt.Fprintf(&d, "M%.1f %.1fv%.0f", b.x(at), y+keyBarH-6, 6.0)
		n++
		ids = append(ids, k.RenewalEvents[i])
	}
	if n == 0 {
		return
	}
	b.t.Plot = append(b.t.Plot, shape{Kind: "path", D: d.String(), Stroke: "#0f172a", SW: 1, Fill: "none", Class: "key-renewal",
		Title:  fmt.Sprintf("%d renewals of %s's key on %s granted by the node (%d in view)", len(k.Renewals), k.Owner, node, n),
		Events: eventIDs(ids), Label: fmt.Sprintf("renewals %s %s n=%d", node, k.Owner, n)})
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
			Title: fmt.Sprintf("%s issues fencing token %d at %s", f.Node, f.FencingToken, checker.Sec(f.At))})
	}
	// Labels: one per token value, where there is room.
	last := map[string]float64{}
	for _, f := range b.mech.Fences {
		r, ok := b.rowOf["node:"+f.Node]
		if !ok || f.At < b.from || f.At > b.to {
			continue
		}
		x := b.x(f.At)
		txt := fmt.Sprintf("token %d", f.FencingToken)
		if l, ok := last[f.Node]; ok && x-l < textWidth(txt, 10)+12 {
			continue
		}
		t.Plot = append(t.Plot, shape{Kind: "text", X: x + 5, Y: r.y + r.h - 3, Text: txt, Size: 10, Fill: "#0f172a", Weight: "700", Halo: true})
		last[f.Node] = x
	}
}

// fenceLabel is how the store row labels a fenced write: the comparison
// the store made, with the highest token it had seen then (Access.Highest,
// which counts reads too), never a reconstruction.
func fenceLabel(a checker.Access) string {
	switch {
	case a.FencingToken == 0:
		return ""
	case a.Accepted && a.Highest == 0:
		return fmt.Sprintf("token %d ✓", a.FencingToken)
	case a.Accepted:
		return fmt.Sprintf("%d ≥ %d ✓", a.FencingToken, a.Highest)
	case a.FencingToken < a.Highest:
		return fmt.Sprintf("%d < %d ✗", a.FencingToken, a.Highest)
	default:
		// Not lower, yet refused: under the strict rule the token has
		// already written once.
		return fmt.Sprintf("%d already used ✗", a.FencingToken)
	}
}
