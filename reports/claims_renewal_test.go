package reports

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

// renewal is the node's execution of a compare-and-pexpire of the lock key
// sent by a client (not a replicated effect), with the node's answer.
func renewal(res *runner.Result, e event.Event) (granted, ok bool) {
	if e.Kind != event.CommandExecuted || len(e.Args) < 4 || !strings.EqualFold(e.Args[0], "eval") ||
		sim.ScriptName(e.Args[1]) != "<compare-and-pexpire>" || e.Args[3] != res.Scenario.Key {
		return false, false
	}
	return e.Reply == ":1", true
}

// renewalClaims checks renewals as drawn against the events they name: a
// refused renewal is the node's execution of a renewal of the lock key
// that answered 0, at its time, on its node; a failed background renewal
// the client's hold.renewal.failed then; a key bar's renewal ticks the
// node's granted renewals by the key's owner, as many as it counts. Every
// hold.renewal.failed is drawn, when any renewal mark is. It returns the
// elements checked.
func renewalClaims(res *runner.Result, tl *timeline) (int, []string) {
	var errs []string
	errf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	n := 0
	failed := map[int]bool{}
	for _, s := range allShapes(tl) {
		words, kv := labelFields(s.Label)
		if len(words) < 3 || !strings.HasPrefix(words[0], "renewal") {
			continue
		}
		n++
		ids, err := parseIDs(s.Events)
		if err != nil {
			errf("%q: %v", s.Label, err)
			continue
		}
		switch {
		case words[0] == "renewal" && words[1] == "refused":
			e := res.Events[ids[0]]
			granted, ok := renewal(res, e)
			if len(ids) != 1 || !ok || granted || e.Node != words[2] || checker.Sec(e.At) != words[len(words)-1] ||
				words[3] != "a" && e.Client != words[3] {
				errf("%q: event %d is not a renewal %s refused then", s.Label, ids[0], words[2])
			}
		case words[0] == "renewal" && words[1] == "failed":
			e := res.Events[ids[0]]
			if len(ids) != 1 || e.Kind != event.RenewalFailed || e.Client != words[2] || checker.Sec(e.At) != words[3] {
				errf("%q: event %d is not %s's failed renewal then", s.Label, ids[0], words[2])
			}
			failed[ids[0]] = true
		case words[0] == "renewals":
			if kv["n"] != fmt.Sprint(len(ids)) {
				errf("%q names %d events", s.Label, len(ids))
			}
			for _, id := range ids {
				e := res.Events[id]
				if granted, ok := renewal(res, e); !ok || !granted || e.Node != words[1] || e.Client != words[2] {
					errf("%q: event %d is not a renewal of %s's key %s granted", s.Label, id, words[2], words[1])
				}
			}
		}
	}
	if n > 0 {
		for i, e := range res.Events {
			if e.Kind == event.RenewalFailed && !failed[i] {
				errf("%s's failed renewal at %v (event %d) is not drawn", e.Client, e.At, i)
			}
		}
	}
	return n, errs
}
