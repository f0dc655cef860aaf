package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

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

// faultClaims checks each fault band against the events it names: the
// fault.applied of a fault of its kind (a partition's naming the host) at
// the band's start,
// then, when the band ends before the run does, the fault's own
// fault.healed or a heal applied at its end (a band no event ends lasts
// to the end of the run, or past it). Every partition applied is
// drawn, when any band is. It returns the bands checked.
func faultClaims(res *runner.Result, tl *timeline) (int, []string) {
	var errs []string
	named := map[int]bool{}
	n := 0
	for _, s := range allShapes(tl) {
		words, _ := labelFields(s.Label)
		if len(words) == 4 && words[0] == "faultrow" {
			// A fault on its target's own row: a pause, a crash, a node down.
			n++
			ids, err := parseIDs(s.Events)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%q: %v", s.Label, err))
				continue
			}
			if e := res.Events[ids[0]]; e.Kind != event.FaultApplied || e.Node != words[2] || !strings.HasPrefix(e.Fault, words[1]+" ") || checker.Sec(e.At) != words[3] {
				errs = append(errs, fmt.Sprintf("%q: event %q (%s %q of %s) is not its fault", s.Label, s.Events, e.Kind, e.Fault, e.Node))
			}
			named[ids[0]] = true
			continue
		}
		if len(words) < 4 || words[0] != "fault" {
			continue
		}
		n++
		host, from, until := "", words[len(words)-2], words[len(words)-1]
		if words[1] == "partition" {
			host = words[2]
		}
		ids, err := parseIDs(s.Events)
		if err != nil || len(ids) == 0 {
			errs = append(errs, fmt.Sprintf("%q: events %q", s.Label, s.Events))
			continue
		}
		a := res.Events[ids[0]]
		named[ids[0]] = true
		hosts := strings.FieldsFunc(a.Fault, func(r rune) bool { return r == ' ' || r == '|' || r == ',' })
		if a.Kind != event.FaultApplied || !strings.HasPrefix(a.Fault, words[1]+" ") || host != "" && !slices.Contains(hosts, host) || checker.Sec(a.At) != from {
			errs = append(errs, fmt.Sprintf("%q: event %d (%s %q at %s) is not its fault", s.Label, ids[0], a.Kind, a.Fault, checker.Sec(a.At)))
			continue
		}
		switch {
		case len(ids) == 1 && host == "":
			// A fault that is not a partition ends on its own (a pause's
			// length): no event marks its end.
		case len(ids) == 1:
			// Nothing healed it in the run: it lasts to the run's end, or
			// to its own end past it.
			if d, err := time.ParseDuration(until); err != nil || d < res.End.Truncate(time.Millisecond) {
				errs = append(errs, fmt.Sprintf("%q: no event ends it before the end of the run (%s)", s.Label, checker.Sec(res.End)))
			}
		case len(ids) == 2:
			h := res.Events[ids[1]]
			if checker.Sec(h.At) != until || !(h.Kind == event.FaultHealed && h.Fault == a.Fault || h.Kind == event.FaultApplied && strings.HasPrefix(h.Fault, "heal")) {
				errs = append(errs, fmt.Sprintf("%q: event %d (%s %q at %s) does not end it", s.Label, ids[1], h.Kind, h.Fault, checker.Sec(h.At)))
			}
		}
	}
	if n > 0 {
		for i, e := range res.Events {
			if e.Kind == event.FaultApplied && strings.HasPrefix(e.Fault, "partition ") && !named[i] {
				errs = append(errs, fmt.Sprintf("partition %q at %v (event %d) is not drawn", e.Fault, e.At, i))
			}
		}
	}
	return n, errs
}
