package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/event"
)

// witnessClaims re-derives the witness's marks from the events they name:
// an overlap's are hold.began events of exactly the clients it names, the
// last of them at its start (an overlap begins when the later hold does); a
// resource violation's are the store's executions of an accepted write by
// the client and at the time its label names, then of an earlier access
// that, for a token violation, carries the token the write is judged
// against (higher for a stale token, the same for a duplicate one). Every
// mark of one violation names the same events. It returns the marks checked.
func witnessClaims(res *runner.Result, tl *timeline) (int, []string) {
	var errs []string
	errf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	acc := storeAccesses(res)
	n := 0
	byClass := map[string]string{} // the events of the first mark of each violation
	for _, s := range allShapes(tl) {
		var kind string
		switch {
		case strings.Contains(s.Class, "witness-overlap") || s.Class == "witness-holder":
			kind = "overlap"
		case strings.Contains(s.Class, "witness-ring"):
			kind = "resource"
		default:
			continue
		}
		n++
		if prev, ok := byClass[kind]; ok && prev != s.Events {
			errf("%s marks name events %q and %q", kind, prev, s.Events)
		}
		byClass[kind] = s.Events
		if s.Label == "" {
			continue
		}
		ids, err := parseIDs(s.Events)
		if err != nil {
			errf("witness %q: %v", s.Label, err)
			continue
		}
		if kind == "overlap" {
			errs = append(errs, overlapClaim(res, s.Label, ids)...)
		} else {
			errs = append(errs, resourceClaim(acc, s.Label, ids)...)
		}
	}
	// A violation the checker found is drawn with its events.
	w := res.Report.Witness
	for kind, found := range map[string]bool{"overlap": w.MutualExclusion != nil, "resource": w.Resource != nil} {
		if found && byClass[kind] == "" {
			errf("the %s violation is drawn with no events", kind)
		}
	}
	return n, errs
}

// overlapClaim checks "overlap c1 c2 FROM TO" against hold.began events.
func overlapClaim(res *runner.Result, label string, ids []int) []string {
	f := strings.Fields(label)
	clients, from := f[1:len(f)-2], f[len(f)-2]
	var actors []string
	var last event.Event
	for _, id := range ids {
		e := res.Events[id]
		if e.Kind != event.HoldBegan {
			return []string{fmt.Sprintf("%q: event %d is a %s, not a hold.began", label, id, e.Kind)}
		}
		if !slices.Contains(actors, e.Client) {
			actors = append(actors, e.Client)
		}
		if e.At >= last.At {
			last = e
		}
	}
	slices.Sort(actors)
	clients = slices.Clone(clients)
	slices.Sort(clients)
	if !slices.Equal(actors, clients) || len(ids) < 2 || checker.Sec(last.At) != from {
		return []string{fmt.Sprintf("%q: its holds (events %v) began for %v, the last at %s", label, ids, actors, checker.Sec(last.At))}
	}
	return nil
}

// resourceClaim checks "KIND CLIENT VALUE AT" against the store's accesses.
func resourceClaim(acc map[int]storeAccess, label string, ids []int) []string {
	f := strings.Fields(label)
	at, client, kind := f[len(f)-1], f[len(f)-3], strings.Join(f[:len(f)-3], " ")
	w, ok := acc[ids[0]]
	if !ok || w.kind != "write" || !w.accepted || w.client != client || checker.Sec(w.at) != at {
		return []string{fmt.Sprintf("%q: event %d is not %s's accepted write at %s", label, ids[0], client, at)}
	}
	o := w
	if len(ids) > 1 {
		if o, ok = acc[ids[1]]; !ok || o.at > w.at {
			return []string{fmt.Sprintf("%q: event %d is no access before the write", label, ids[1])}
		}
	}
	switch {
	case kind == checker.StaleToken && !(o.accepted && o.fence > w.fence):
		return []string{fmt.Sprintf("%q: %s's token %d is not above the write's %d", label, o.client, o.fence, w.fence)}
	case kind == checker.DuplicateToken && !(o.accepted && o.kind == "write" && o.fence == w.fence && len(ids) == 2):
		return []string{fmt.Sprintf("%q: %s's %s does not carry the write's token %d", label, o.client, o.kind, w.fence)}
	}
	return nil
}
