package reports

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/event"
)

// The faults drawn, re-derived from the events with the test's own table
// of what each fault does to its target (sim/faults' apply, sim/process.go):
// a pause is the target's host.paused and ends at its host.resumed, a hang
// its process.hung and process.continued, a node crash the node's or
// server's crash and its restart, a partition its fault.healed or a heal.
var (
	claimFaultStarts = map[string][]event.Kind{
		"pause": {event.HostPaused}, "hang": {event.ProcessHung}, "crash": {event.HostCrashed},
		"node-crash": {event.NodeCrashed, event.ServerCrashed, event.DBServerCrashed, event.EtcdMemberCrashed},
	}
	claimFaultEnds = map[string][]event.Kind{
		"pause": {event.HostResumed}, "hang": {event.ProcessContinued},
		"node-crash": {event.NodeRestarted, event.ServerRestarted, event.DBServerRestarted, event.EtcdMemberStarted, event.FSServerRestarted},
	}
)

// faultClaims checks every fault element: bands ("fault", "faultrow"),
// the lane texts above the rows ("faultlane"), the start lines
// ("faultstart"), and the words and marks on a target's row ("paused",
// "wakes", "crash", "down", "restarts"); then that every pause, resume,
// hang, continuation and crash of a drawn client, and every partition, is
// named by some element. It returns the elements checked.
func faultClaims(res *runner.Result, tl *timeline) (int, []string) {
	var errs []string
	named := map[int]bool{}
	n := 0
	for _, s := range allShapes(tl) {
		words, _ := labelFields(s.Label)
		if len(words) == 0 {
			continue
		}
		var err error
		switch words[0] {
		case "fault", "faultlane", "faultrow", "faultstart":
			err = faultBandClaim(res, words, s.Events, named)
			if err == nil && words[0] == "faultlane" {
				err = faultLaneWords(res, words, s.Text)
			}
		case "paused", "wakes", "hung", "continues", "crash", "down", "restarts":
			err = faultRowClaim(res, words, s.Events, named)
			if err == nil && (words[0] == "paused" || words[0] == "hung") {
				err = pausedWords(words, s.Text)
			}
		default:
			continue
		}
		n++
		if err != nil {
			errs = append(errs, fmt.Sprintf("%q (events %q): %v", s.Label, s.Events, err))
		}
	}
	if n == 0 {
		return 0, errs
	}
	rows := map[string]bool{}
	for _, c := range res.Scenario.ClientNames() {
		rows[c] = true
	}
	for i, e := range res.Events {
		switch {
		case e.Kind == event.FaultApplied && strings.HasPrefix(e.Fault, "partition "),
			rows[e.Actor] && slices.Contains([]event.Kind{event.HostPaused, event.HostResumed, event.HostCrashed, event.ProcessHung, event.ProcessContinued}, e.Kind):
			if !named[i] {
				errs = append(errs, fmt.Sprintf("%s %q of %s at %v (event %d) is not drawn", e.Kind, e.Fault, e.Actor, e.At, i))
			}
		}
	}
	return n, errs
}

// faultBandClaim: "fault KIND [HOST] FROM UNTIL", "faultlane KIND FROM
// UNTIL", "faultrow KIND TARGET FROM UNTIL", "faultstart KIND FROM". The
// first event is the fault.applied of that kind at FROM; the others are
// its target's own start at FROM and what ended it at UNTIL; with no end
// named, nothing ended it before UNTIL and UNTIL is the run's end (or the
// fault's own window, for a drop rule, which no event closes).
func faultBandClaim(res *runner.Result, words []string, evs string, named map[int]bool) error {
	ids, err := parseIDs(evs)
	if err != nil {
		return err
	}
	kind, host := words[1], ""
	if words[0] == "fault" && kind == "partition" || words[0] == "faultrow" {
		host = words[2]
	}
	from, until := words[len(words)-2], words[len(words)-1]
	if words[0] == "faultstart" {
		from, until = words[2], words[2]
	}
	a := res.Events[ids[0]]
	named[ids[0]] = true
	hosts := strings.FieldsFunc(a.Fault, func(r rune) bool { return r == ' ' || r == '|' || r == ',' })
	if a.Kind != event.FaultApplied || !strings.HasPrefix(a.Fault, kind+" ") || host != "" && !slices.Contains(hosts, host) || checker.Sec(a.At) != from {
		return fmt.Errorf("event %d (%s %q at %s) is not its fault", ids[0], a.Kind, a.Fault, checker.Sec(a.At))
	}
	if words[0] == "faultstart" {
		if len(ids) != 1 {
			return fmt.Errorf("a fault's start names its fault.applied alone")
		}
		return nil
	}
	target := a.Node
	ended := false
	for _, id := range ids[1:] {
		e := res.Events[id]
		named[id] = true
		switch {
		case slices.Contains(claimFaultStarts[kind], e.Kind) && (e.Actor == target || e.Node == target) && checker.Sec(e.At) == from:
		case slices.Contains(claimFaultEnds[kind], e.Kind) && (e.Actor == target || e.Node == target) && checker.Sec(e.At) == until:
			ended = true
		case kind == "partition" && checker.Sec(e.At) == until && (e.Kind == event.FaultHealed && e.Fault == a.Fault || e.Kind == event.FaultApplied && strings.HasPrefix(e.Fault, "heal")):
			ended = true
		default:
			return fmt.Errorf("event %d (%s of %s at %s) neither begins nor ends it", id, e.Kind, e.Actor, checker.Sec(e.At))
		}
	}
	// Nothing of the kind that ends it happened between its ends.
	u, _ := time.ParseDuration(until)
	for _, e := range res.Events {
		if e.At <= a.At || e.At >= u || checker.Sec(e.At) == until {
			continue
		}
		if slices.Contains(claimFaultEnds[kind], e.Kind) && (e.Actor == target || e.Node == target) ||
			kind == "partition" && (e.Kind == event.FaultHealed && e.Fault == a.Fault || e.Kind == event.FaultApplied && strings.HasPrefix(e.Fault, "heal")) {
			return fmt.Errorf("drawn to %s, but %s of %s at %s ended it", until, e.Kind, e.Actor, checker.Sec(e.At))
		}
	}
	if !ended && until != from && kind != "drop" && kind != "delay" {
		if d, err := time.ParseDuration(until); err != nil || d < res.End.Truncate(time.Millisecond) {
			return fmt.Errorf("no event ends it at %s, before the end of the run (%s)", until, checker.Sec(res.End))
		}
	}
	return nil
}

// faultRowClaim: "paused T FROM UNTIL" (T's host.paused at FROM, its
// host.resumed at UNTIL unless the run ends first, none between), "wakes T
// AT" (T's host.resumed), "hung T FROM UNTIL" and "continues T AT"
// likewise with process.hung and process.continued, "crash T AT" (T's
// host.crashed), "down T FROM
// UNTIL" (T's crash at FROM, its restart at UNTIL or the run's end, none
// between), "restarts T AT" (T's restart).
func faultRowClaim(res *runner.Result, words []string, evs string, named map[int]bool) error {
	ids, err := parseIDs(evs)
	if err != nil {
		return err
	}
	target, from := words[1], words[2]
	until := words[len(words)-1]
	var starts, ends []event.Kind
	switch words[0] {
	case "paused":
		starts, ends = claimFaultStarts["pause"], claimFaultEnds["pause"]
	case "wakes":
		ends = claimFaultEnds["pause"]
	case "hung":
		starts, ends = claimFaultStarts["hang"], claimFaultEnds["hang"]
	case "continues":
		ends = claimFaultEnds["hang"]
	case "crash":
		starts = claimFaultStarts["crash"]
	case "down":
		starts, ends = claimFaultStarts["node-crash"], claimFaultEnds["node-crash"]
	case "restarts":
		ends = claimFaultEnds["node-crash"]
	}
	mine := func(e event.Event, kinds []event.Kind, at string) bool {
		return slices.Contains(kinds, e.Kind) && (e.Actor == target || e.Node == target) && checker.Sec(e.At) == at
	}
	began, ended := starts == nil, false
	for _, id := range ids {
		e := res.Events[id]
		named[id] = true
		switch {
		case e.Kind == event.FaultApplied && e.Node == target && checker.Sec(e.At) == from:
		case mine(e, starts, from):
			began = true
		case mine(e, ends, until):
			ended = true
		default:
			return fmt.Errorf("event %d (%s of %s at %s) is not %s's", id, e.Kind, e.Actor, checker.Sec(e.At), words[0])
		}
	}
	if !began && words[0] == "down" && !slices.ContainsFunc(res.Events, func(e event.Event) bool { return mine(e, starts, from) }) {
		// A server with no crash event of its own (a file server): its
		// fault.applied is the start.
		began = slices.ContainsFunc(ids, func(id int) bool { return res.Events[id].Kind == event.FaultApplied })
	}
	if !began {
		return fmt.Errorf("names no start of it at %s", from)
	}
	if (words[0] == "wakes" || words[0] == "continues" || words[0] == "restarts") && !ended {
		return fmt.Errorf("names no end of it at %s", until)
	}
	if (words[0] == "paused" || words[0] == "hung" || words[0] == "down") && !ended {
		if d, err := time.ParseDuration(until); err != nil || d < res.End.Truncate(time.Millisecond) {
			return fmt.Errorf("no event ends it at %s, before the end of the run", until)
		}
	}
	if words[0] == "paused" || words[0] == "hung" || words[0] == "down" {
		f, _ := time.ParseDuration(from)
		u, _ := time.ParseDuration(until)
		for _, e := range res.Events {
			if e.At > f && e.At < u && slices.Contains(ends, e.Kind) && (e.Actor == target || e.Node == target) && checker.Sec(e.At) != until {
				return fmt.Errorf("drawn to %s, but %s at %s ended it", until, e.Kind, checker.Sec(e.At))
			}
		}
	}
	return nil
}

// livenessClaims: an unavailable stretch "unavailable FROM TO stuck=…"
// has no hold beginning inside it; a hold that began at TO ended it and
// is named; each stuck holder's latest hold.began before FROM is named.
// And the ensemble's expiry of a session, "expiry C AT", is a
// zk.session.expired at AT of a session created for C; every expiry of a
// session of a client with a drawn session lane is drawn.
func livenessClaims(res *runner.Result, tl *timeline) (int, []string) {
	var errs []string
	n := 0
	expired := map[int]bool{}
	lanes := map[string]bool{}
	clientOf := map[string]string{}
	for _, e := range res.Events {
		if e.Kind == event.SessionCreated {
			clientOf[e.Session] = e.Client
		}
	}
	for _, s := range allShapes(tl) {
		words, kv := labelFields(s.Label)
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "session":
			lanes[words[1]] = true
		case "expiry":
			n++
			ids, err := parseIDs(s.Events)
			if err != nil || len(ids) != 1 {
				errs = append(errs, fmt.Sprintf("%q: events %q", s.Label, s.Events))
				continue
			}
			e := res.Events[ids[0]]
			expired[ids[0]] = true
			if e.Kind != event.SessionExpired || clientOf[e.Session] != words[1] || checker.Sec(e.At) != words[2] {
				errs = append(errs, fmt.Sprintf("%q: event %d (%s of %s at %s) is not its session's expiry", s.Label, ids[0], e.Kind, clientOf[e.Session], checker.Sec(e.At)))
			}
		case "unavailable":
			n++
			errs = append(errs, unavailableClaim(res, words, kv, s.Events)...)
			errs = append(errs, waitingClaim(res, tl, words, kv, s.Clients)...)
		}
	}
	for i, e := range res.Events {
		if e.Kind == event.SessionExpired && lanes[clientOf[e.Session]] && !expired[i] {
			errs = append(errs, fmt.Sprintf("the expiry of %s's session at %s (event %d) is not drawn", clientOf[e.Session], checker.Sec(e.At), i))
		}
	}
	return n, errs
}

func unavailableClaim(res *runner.Result, words []string, kv map[string]string, evs string) []string {
	var ids []int
	if evs != "" {
		var err error
		if ids, err = parseIDs(evs); err != nil {
			return []string{err.Error()}
		}
	}
	from, _ := time.ParseDuration(words[1])
	to, _ := time.ParseDuration(words[2])
	var stuck []string
	if kv["stuck"] != "" {
		stuck = strings.Split(kv["stuck"], ",")
	}
	var errs []string
	latest := map[string]int{}
	for i, e := range res.Events {
		if e.Kind != event.HoldBegan {
			continue
		}
		at := e.At.Truncate(time.Millisecond)
		switch {
		case at > from && at < to:
			errs = append(errs, fmt.Sprintf("unavailable %s–%s: %s's hold began inside it at %s", words[1], words[2], e.Actor, checker.Sec(e.At)))
		case checker.Sec(e.At) == words[2] && !slices.Contains(ids, i):
			errs = append(errs, fmt.Sprintf("unavailable %s–%s: %s's hold began at its end (event %d), not named", words[1], words[2], e.Actor, i))
		case e.At <= from:
			latest[e.Actor] = i
		}
	}
	for _, c := range stuck {
		if i, ok := latest[c]; !ok || !slices.Contains(ids, i) {
			errs = append(errs, fmt.Sprintf("unavailable %s–%s: stuck %s's hold (its hold.began before it) is not named", words[1], words[2], c))
		}
	}
	for _, id := range ids {
		if res.Events[id].Kind != event.HoldBegan {
			errs = append(errs, fmt.Sprintf("unavailable %s–%s: event %d is a %s", words[1], words[2], id, res.Events[id].Kind))
		}
	}
	return errs
}

// The herd chart's counts are the watch notifications of each recipe's
// run: the frames of a watch event its clients received, each named once,
// and all of them.
func TestHerdCountsAreEvents(t *testing.T) {
	var runs []herdRun
	results := map[string]*runner.Result{}
	for _, r := range catalogueMechanisms(t) {
		if r.id != "zk-herd-effect" && r.id != "zk-queue-no-herd" {
			continue
		}
		runs = append(runs, herdRuns(RunInput{Result: r.res})...)
		results[r.res.Scenario.Algorithm] = r.res
	}
	ch := newHerdChart(runs)
	if ch == nil {
		t.Fatal("no herd chart for the herd and queue lessons")
	}
	checked := 0
	for _, s := range ch.Shapes {
		words, _ := labelFields(s.Label)
		if len(words) != 3 || words[0] != "herd" {
			continue
		}
		checked++
		res := results[words[1]]
		ids, err := parseIDs(s.Events)
		if err != nil {
			t.Errorf("%q: %v", s.Label, err)
			continue
		}
		clients := res.Scenario.ClientNames()
		var want []int
		for i, e := range res.Events {
			if e.Kind == event.FrameReceived && e.Op == "WATCH" && slices.Contains(clients, e.Actor) {
				want = append(want, i)
			}
		}
		if fmt.Sprint(len(want)) != words[2] || !slices.Equal(ids, want) {
			t.Errorf("%q names %d events; %d watch notifications reached %s's clients", s.Label, len(ids), len(want), words[1])
		}
		per, peak := map[string]int{}, 0
		for _, id := range want {
			per[res.Events[id].Actor]++
			peak = max(peak, per[res.Events[id].Actor])
		}
		if !strings.HasSuffix(s.Text, fmt.Sprintf("%d watch notifications in all, at most %d to one waiter", len(want), peak)) {
			t.Errorf("%q: %d notifications, at most %d to one client", s.Text, len(want), peak)
		}
	}
	if checked != 2 {
		t.Errorf("%d herd counts drawn, want 2", checked)
	}
}

// faultLaneWords: a fault's lane says the extent its label claims — "(at
// FROM)" for an instant, "(FROM → UNTIL)", or "(FROM → end of run…)" when
// it lasts to the run's end.
func faultLaneWords(res *runner.Result, words []string, text string) error {
	from, until := words[2], words[3]
	u, _ := time.ParseDuration(until)
	switch {
	case from == until && strings.HasSuffix(text, "(at "+from+")"):
	case strings.HasSuffix(text, "("+from+" → "+until+")"):
	case u >= res.End.Truncate(time.Millisecond) && strings.Contains(text, "("+from+" → end of run"):
	default:
		return fmt.Errorf("its text %q does not say %s → %s", text, from, until)
	}
	return nil
}

// pausedWords: "c1 paused (D)" says the length its label's ends give.
func pausedWords(words []string, text string) error {
	f, _ := time.ParseDuration(words[2])
	u, _ := time.ParseDuration(words[3])
	_, d, _ := strings.Cut(strings.TrimSuffix(text, ")"), "(")
	got, err := time.ParseDuration(d)
	if err != nil || (got-(u-f)).Abs() > time.Millisecond {
		return fmt.Errorf("its text %q does not say the %v from %s to %s", text, u-f, words[2], words[3])
	}
	return nil
}

// waitingClaim: the clients an unavailable stretch [FROM, TO) names as
// waiting (its data-clients, and one hatched "waiting" mark per client)
// are the clients with an acquire attempt outstanding in it, re-derived
// from the events and the scenario's plan: a client's attempt ends at its
// hold.began, hold.gave_up or host.crashed (runner/workload.go) and a
// hold.refused leaves it open; so a client waited if an attempt of it
// ended, or was refused, inside (FROM, TO], or if it had begun (written
// an event) before TO and at FROM had cycles left (hold.began and
// hold.gave_up each use one up) and had not crashed; the stuck holder
// does not wait.
func waitingClaim(res *runner.Result, tl *timeline, words []string, kv map[string]string, drawn string) []string {
	from, _ := time.ParseDuration(words[1])
	to, _ := time.ParseDuration(words[2])
	// The label's times are rounded to the ms: the events' own instants
	// are compared at that grain.
	ms := func(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }
	stuck := strings.Split(kv["stuck"], ",")
	var want []string
	for _, c := range res.Scenario.ClientNames() {
		if slices.Contains(stuck, c) {
			continue
		}
		started, crashed, used, inside := false, false, 0, false
		for _, e := range res.Events {
			if e.Actor != c {
				continue
			}
			at := ms(e.At)
			started = started || at < to
			isEnd := e.Kind == event.HoldBegan || e.Kind == event.AcquireGaveUp
			switch {
			case at > from && at <= to && (isEnd || e.Kind == event.AcquireFailed):
				inside = true
			case at <= from:
				crashed = crashed || e.Kind == event.HostCrashed
				if isEnd {
					used++
				}
			}
		}
		open := started && !crashed && used < res.Scenario.Plan(c).Cycles
		if inside || open {
			want = append(want, c)
		}
	}
	var errs []string
	if got := strings.Fields(drawn); !slices.Equal(got, want) {
		errs = append(errs, fmt.Sprintf("unavailable %s–%s: drawn waiting %v; the events say %v had an attempt outstanding", words[1], words[2], got, want))
	}
	var hatched []string
	for _, s := range allShapes(tl) {
		if w, _ := labelFields(s.Label); len(w) == 4 && w[0] == "waiting" && w[2] == words[1] && w[3] == words[2] {
			hatched = append(hatched, w[1])
		}
	}
	slices.Sort(hatched)
	if !slices.Equal(hatched, want) {
		errs = append(errs, fmt.Sprintf("unavailable %s–%s: rows hatched waiting %v; the events say %v", words[1], words[2], hatched, want))
	}
	return errs
}
