package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

// storeAccess is one access to the protected resource as the event log
// tells it: the store's command.executed of a READ or WRITE, the token the
// client held (its last hold.began's fence: the workload sends the lease's
// fence) and the highest token the store had accepted before it.
type storeAccess struct {
	client, kind, reply string
	at                  time.Duration
	accepted            bool
	fence, highest      int64
}

// storeAccesses re-derives every access from the events alone, by event
// position. A fencing store compares a token against the highest it has
// accepted (reads included); a store that does not fence compares nothing.
func storeAccesses(res *runner.Result) map[int]storeAccess {
	fenced := res.Scenario.Resource.TokenCheck != "" && res.Scenario.Resource.TokenCheck != "none"
	held := map[string]int64{}
	var highest int64
	out := map[int]storeAccess{}
	for i, e := range res.Events {
		switch {
		case e.Kind == event.HoldBegan:
			held[e.Client] = e.FencingToken
		case e.Kind == event.CommandExecuted && e.Node == scenarios.ResourceHost && (e.Op == "READ" || e.Op == "WRITE"):
			a := storeAccess{client: e.Client, kind: strings.ToLower(e.Op), reply: e.Reply, at: e.At,
				accepted: !strings.HasPrefix(e.Reply, "rejected"), fence: held[e.Client]}
			if fenced && a.fence != 0 {
				a.highest = highest
				if a.accepted && a.fence > highest {
					highest = a.fence
				}
			}
			out[i] = a
		}
	}
	return out
}

// fenceClaim is the store's comparison as a label states it.
func (a storeAccess) fenceClaim() string {
	switch {
	case a.fence == 0:
		return ""
	case a.accepted && a.highest == 0:
		return fmt.Sprintf("token %d ✓", a.fence)
	case a.accepted:
		return fmt.Sprintf("%d ≥ %d ✓", a.fence, a.highest)
	case a.fence < a.highest:
		return fmt.Sprintf("%d < %d ✗", a.fence, a.highest)
	}
	return fmt.Sprintf("%d already used ✗", a.fence)
}

// accessClaims checks every access marker's claim (data-label) and every
// access label's words (the value read, "rejects", the fence comparison)
// against the events they name, and that every access in the log is drawn.
func accessClaims(res *runner.Result, tl *timeline) (int, []string) {
	var errs []string
	errf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	want := storeAccesses(res)
	drawn := map[int]bool{}
	for _, s := range allShapes(tl) {
		if strings.HasPrefix(s.Label, "access ") {
			ids, err := parseIDs(s.Events)
			if err != nil || len(ids) != 1 {
				errf("%q: its events are %q, not one access", s.Label, s.Events)
				continue
			}
			a, ok := want[ids[0]]
			if !ok {
				errf("%q: event %d is no access to the store", s.Label, ids[0])
				continue
			}
			drawn[ids[0]] = true
			exp := fmt.Sprintf("access %s %s at=%d ok", a.client, a.kind, a.at)
			if !a.accepted {
				exp = strings.TrimSuffix(exp, "ok") + "rejected"
			}
			if a.fence != 0 {
				exp += fmt.Sprintf(" fence=%d highest=%d", a.fence, a.highest)
			}
			if s.Label != exp {
				errf("access marker %q, the events say %q", s.Label, exp)
			}
			continue
		}
		// The access labels sit in the plot; the witness's lanes above it
		// name accesses too (claims_witness_test.go).
		if s.Kind == "text" && s.Events != "" && s.Label == "" && slices.ContainsFunc(tl.Plot, func(p shape) bool { return p == s }) {
			errs = append(errs, accessTextClaim(want, s)...)
		}
	}
	for i, a := range want {
		if a.at >= 0 && a.at <= res.End && !drawn[i] {
			errf("%s's %s at %v (event %d) is not drawn", a.client, a.kind, a.at, i)
		}
	}
	return len(drawn), errs
}

// accessTextClaim checks an access label: one phrase per marker it
// stands for, in order.
func accessTextClaim(want map[int]storeAccess, s shape) []string {
	ids, err := parseIDs(s.Events)
	if err != nil {
		return []string{err.Error()}
	}
	if _, ok := want[ids[0]]; !ok {
		return nil // another element kind's text
	}
	parts := strings.Split(s.Text, ", ")
	if len(parts) != len(ids) {
		return []string{fmt.Sprintf("access label %q names %d events (%s)", s.Text, len(ids), s.Events)}
	}
	var errs []string
	for k, id := range ids {
		a, ok := want[id]
		if !ok {
			errs = append(errs, fmt.Sprintf("access label %q: event %d is no access", s.Text, id))
			continue
		}
		p := parts[k]
		var okText bool
		switch {
		case a.kind == "read":
			okText = p == "read "+a.reply
		case strings.HasPrefix(p, "write"):
			okText = (p == "write rejected") == !a.accepted
		default: // the store lane: "99 by c2: 34 ≥ 33 ✓", "rejects c1: 33 < 34 ✗"
			head, fence, _ := strings.Cut(p, ": ")
			okText = fence == a.fenceClaim() && (head == "rejects "+a.client) == !a.accepted &&
				(a.accepted == strings.HasSuffix(head, " by "+a.client))
		}
		if !okText {
			errs = append(errs, fmt.Sprintf("access label %q: %q contradicts %s's %s at %v (accepted=%t token %d, highest %d)",
				s.Text, p, a.client, a.kind, a.at, a.accepted, a.fence, a.highest))
		}
	}
	return errs
}
