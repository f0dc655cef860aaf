package reports

import (
	"fmt"
	"math"
	"strings"

	"github.com/locklab/locklab/checker"
)

// votes draws each Redlock attempt on its client's line: a tick at the
// client's decision, the tally against the quorum of the configured lock
// nodes, why a failed attempt failed, and for a granted lock the validity
// window the client computed. Failed attempts in a row with the same count
// and reason share one path of ticks and one tooltip. Every element carries
// the ids of the events it is drawn from (data-events) and its claim
// (data-label, attemptLabel), which TestDrawnClaimsAreEvents re-derives.
func (b *tlBuilder) votes(r row) {
	t := b.t
	line := map[string]float64{}
	for i, c := range b.voteClients {
		line[c] = r.y + 6 + subLineH*float64(i)
		t.Over = append(t.Over, shape{Kind: "text", X: t.X0 - 8, Y: line[c] + 11, Text: c, Size: 11, Fill: b.color[c], Weight: "700", Anchor: "end"})
	}
	lastEnd := map[string]float64{}
	// label places an attempt's words after x, or before it when they do not
	// fit there, unless they would run into the previous ones.
	label := func(a voteAttempt, x, y float64, text, ids string) {
		w := boldWidth(text, 10)
		s := shape{Kind: "text", X: x + 6, Y: y + 11, Text: text, Size: 10, Fill: "#0f172a", Weight: "700", Halo: true, Events: ids}
		switch {
		case x+6 > lastEnd[a.Client] && x+6+w < t.X1:
			lastEnd[a.Client] = x + 6 + w + 4
		case x-6-w > t.X0 && x-6-w > lastEnd[a.Client]:
			s.X, s.Anchor = x-6, "end"
			lastEnd[a.Client] = x + 4
		default:
			return
		}
		t.Plot = append(t.Plot, s)
	}
	var group []voteAttempt // failed attempts in a row, same count and reason
	pathAt := map[string]int{}
	flush := func() {
		if len(group) == 0 {
			return
		}
		a, z := group[0], group[len(group)-1]
		y := line[a.Client]
		var ids []int
		d := ""
		for _, g := range group {
			ids = append(ids, g.Events...)
			d += fmt.Sprintf("M%.1f %.1fv13", b.x(g.To), y+1)
		}
		title := fmt.Sprintf("%d failed attempt(s) by %s from %s to %s: %s; %s", len(group), a.Client, checker.Sec(a.From), checker.Sec(z.To),
			failSentence(a), tallyText(a))
		pathAt[a.Client] = len(t.Plot)
		t.Plot = append(t.Plot, shape{Kind: "path", D: d, Stroke: "#94a3b8", SW: 3, Fill: "none", Class: "vote vote-failed", Title: title,
			Label: attemptLabel(group), Events: eventIDs(ids)})
		label(a, b.x(a.To), y, attemptPhrase(a, b.res.Scenario.TTL.D()), eventIDs(a.Events))
		group = group[:0]
	}
	for _, a := range b.mech.Attempts {
		y, ok := line[a.Client]
		if !ok || !b.visible(a.From, a.To) {
			continue
		}
		if !a.Held {
			if len(group) > 0 && (group[0].Client != a.Client || group[0].Reason != a.Reason || group[0].Yes() != a.Yes()) {
				flush()
			}
			group = append(group, a)
			continue
		}
		flush()
		b.heldAttempt(a, y, label)
	}
	flush()
}

// heldAttempt draws a granted attempt: its tick, its validity window and
// the tally.
func (b *tlBuilder) heldAttempt(a voteAttempt, y float64, label func(voteAttempt, float64, float64, string, string)) {
	t := b.t
	x := b.x(a.To)
	color := b.color[a.Client]
	ids := eventIDs(a.Events)
	title := fmt.Sprintf("%s's attempt %s → %s: %s; %d of %d nodes, quorum %d; granted, valid until %s", a.Client, checker.Sec(a.From), checker.Sec(a.To),
		tallyText(a), a.Yes(), len(a.Votes), a.Quorum, checker.Sec(a.Validity))
	vx := b.x(a.Validity)
	// As tall as the vote mark: the attempt's label sits inside its
	// validity, not half over the outline.
	t.Plot = append(t.Plot, shape{Kind: "rect", X: x, Y: y + 1, W: math.Max(vx-x, 1), H: 13, Fill: color, Opacity: 0.18, Stroke: color, SW: 1, Class: "validity", Title: title,
		Events: ids, Label: fmt.Sprintf("validity %s %s %s", a.Client, checker.Sec(a.To), checker.Sec(a.Validity))})
	t.Plot = append(t.Plot, shape{Kind: "line", X: vx, Y: y, X2: vx, Y2: y + 15, Stroke: color, SW: 2, Title: a.Client + "'s computed validity ends at " + checker.Sec(a.Validity), Events: ids})
	t.Plot = append(t.Plot, shape{Kind: "rect", X: x - 2, Y: y + 1, W: 4, H: 13, Fill: color, Title: title, Class: "vote", Label: attemptLabel([]voteAttempt{a}), Events: ids})
	var yes []string
	for _, v := range a.Votes {
		if v.Got == voteYes {
			yes = append(yes, v.Node)
		}
	}
	text := fmt.Sprintf("%d/%d votes (%s), quorum %d → validity %s", a.Yes(), len(a.Votes), strings.Join(yes, " "), a.Quorum, dur(a.Validity-a.To))
	label(a, x, y, text, ids)
}

// tallyText lists each configured node's answer as the client saw it.
func tallyText(a voteAttempt) string {
	var out []string
	for _, v := range a.Votes {
		switch v.Got {
		case voteYes:
			out = append(out, v.Node+" yes")
		case voteNo:
			out = append(out, v.Node+" refused")
		case voteUnheard:
			out = append(out, v.Node+" set the key but its reply never reached the client")
		case voteNotAsked:
			out = append(out, v.Node+" not asked (no connection)")
		default:
			out = append(out, v.Node+" no answer")
		}
	}
	return strings.Join(out, ", ")
}

// failSentence says why a failed attempt failed.
func failSentence(a voteAttempt) string {
	switch a.Reason {
	case failValidity:
		return fmt.Sprintf("%d of %d nodes said yes, a quorum, but the attempt took %s: nothing was left of the TTL once elapsed time and drift were subtracted, so the client gave up", a.Yes(), len(a.Votes), dur(a.To-a.From))
	case failTimeout:
		return fmt.Sprintf("%d of %d yes votes reached the client, %d answers did not (lost or too late): quorum %d not reached", a.Yes(), len(a.Votes), a.missing(), a.Quorum)
	}
	return fmt.Sprintf("%d of %d nodes said yes, fewer than the quorum of %d", a.Yes(), len(a.Votes), a.Quorum)
}
