package reports

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
	"github.com/locklab/locklab/sim/event"
)

// drawnRun is one catalogue scenario's run with its derived mechanism.
type drawnRun struct {
	id  string
	res *scenarios.Result
	m   *mechanism
}

func catalogueMechanisms(t *testing.T) []drawnRun {
	t.Helper()
	bubblehost.Bind(t)
	all, _ := scenarios.Catalogue()
	var out []drawnRun
	for _, s := range all {
		if s.Clients.Count > 20 {
			continue // large scenarios draw the dense view, no mechanism
		}
		res, err := scenarios.Run(s, s.Seed, scenarios.Options{KeepTrace: true})
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		out = append(out, drawnRun{s.ID, res, deriveMechanism(res)})
	}
	return out
}

// Every drawn element of every catalogue scenario names the events it came
// from, on the node it is drawn on: a vote on node N is N's answer to that
// SET; a key bar on N starts with a write of that token that N ran or
// applied and ends with N's own release, expiry, crash or overwrite; a
// replication arrow is an effect the named master shipped to the named
// replica; a promotion is the node's; a fencing label is the store's
// comparison. Drawing any of these from another node fails here.
func TestDrawnElementsAreEvents(t *testing.T) {
	for _, r := range catalogueMechanisms(t) {
		if r.m == nil {
			t.Errorf("%s: no mechanism derived from a kept run", r.id)
			continue
		}
		for _, err := range drawnMismatches(r.res, r.m) {
			t.Errorf("%s: %s", r.id, err)
		}
	}
}

// drawnMismatches checks m against res's events.
func drawnMismatches(res *scenarios.Result, m *mechanism) []string {
	var errs []string
	errf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	has := func(match func(e *event.Event) bool) bool {
		for i := range res.Events {
			if match(&res.Events[i]) {
				return true
			}
		}
		return false
	}
	key := res.Scenario.Key
	for _, a := range m.Attempts {
		for _, v := range a.Votes {
			ran := func(e *event.Event) bool {
				return e.Kind == event.CommandExecuted && e.Node == v.Node && e.At >= a.From && e.At <= a.To &&
					strings.Contains(e.Command, " "+key+" "+a.Token)
			}
			granted := has(func(e *event.Event) bool { return ran(e) && e.Reply == "+OK" })
			if (v.Got == "yes") != granted {
				errf("%s's attempt at %v: vote of %s drawn %q, the node granted: %v", a.Client, a.From, v.Node, v.Got, granted)
			}
		}
	}
	for _, v := range m.Voters {
		if !has(func(e *event.Event) bool {
			return e.Kind == event.CommandSent && e.Node == v && strings.Contains(e.Command, " "+key+" ")
		}) {
			errf("%s counted as a Redlock voter but no client asked it for %s", v, key)
		}
	}
	for node, spans := range m.Keys {
		for _, k := range spans {
			if k.From >= 0 && !has(func(e *event.Event) bool {
				return e.At == k.From && e.Node == node && (e.Kind == event.NodeRestarted || e.Kind == event.ReplicationFullSync ||
					(e.Kind == event.CommandExecuted || e.Kind == event.ReplicationApplied) && strings.Contains(e.Command, k.Token))
			}) {
				errf("key bar of %s on %s from %v: no write of that token ran on %s then", k.Owner, node, k.From, node)
			}
			switch k.End {
			case "released":
				if !has(func(e *event.Event) bool {
					return e.At == k.To && e.Node == node && (e.Kind == event.CommandExecuted || e.Kind == event.ReplicationApplied)
				}) {
					errf("key bar of %s on %s released at %v: %s ran no command then", k.Owner, node, k.To, node)
				}
			case "full sync":
				if !has(func(e *event.Event) bool {
					return e.At == k.To && e.Node == node && e.Kind == event.ReplicationFullSync
				}) {
					errf("key bar of %s on %s replaced by a full sync at %v that %s did not have", k.Owner, node, k.To, node)
				}
			case "crash":
				if !has(func(e *event.Event) bool { return e.At == k.To && e.Node == node && e.Kind == event.NodeCrashed }) {
					errf("key bar of %s on %s ends in a crash at %v that %s did not have", k.Owner, node, k.To, node)
				}
			}
		}
	}
	for _, p := range m.Repl {
		if !has(func(e *event.Event) bool {
			kind := e.Kind == event.ReplicationApplied
			if p.Lost {
				kind = e.Kind == event.ReplicationLost || e.Kind == event.MessageLost || e.Kind == event.MessageDropped
			}
			return kind && e.At == p.Arrived && e.From == p.From && e.To == p.To && e.Command == p.Summary
		}) {
			errf("replication %s → %s of %q at %v (lost %v): no such event", p.From, p.To, p.Summary, p.Arrived, p.Lost)
		}
	}
	// The other way round: every effect shipped, lost or dropped between
	// two Redis nodes is drawn (the old master's replications after it
	// rejoins, a replication a fault dropped), and no key bar outlives a
	// full sync that replaced its node's data.
	drawnRepl := map[string]int{}
	for _, p := range m.Repl {
		drawnRepl[fmt.Sprint(p.Arrived, p.From, p.To, p.Summary)]++
	}
	isNode := map[string]bool{}
	for _, n := range m.Nodes {
		isNode[n] = true
	}
	for _, e := range res.Events {
		replication := e.Kind == event.ReplicationApplied || e.Kind == event.ReplicationLost ||
			(e.Kind == event.MessageLost || e.Kind == event.MessageDropped) && e.Op == "REPLICATE"
		if !replication || !isNode[e.From] || !isNode[e.To] {
			continue
		}
		k := fmt.Sprint(e.At, e.From, e.To, e.Command)
		if drawnRepl[k] == 0 {
			errf("%s %s → %s of %q at %v is not drawn", e.Kind, e.From, e.To, e.Command, e.At)
			continue
		}
		drawnRepl[k]--
	}
	for _, e := range res.Events {
		if e.Kind != event.ReplicationFullSync {
			continue
		}
		for _, k := range m.Keys[e.Node] {
			if k.From >= 0 && k.From < e.At && k.To > e.At {
				errf("%s's key on %s drawn from %v to %v, across %s's full sync from %s at %v", k.Owner, e.Node, k.From, k.To, e.Node, e.From, e.At)
			}
		}
	}
	for _, p := range m.Promotions {
		if !has(func(e *event.Event) bool {
			return e.Kind == event.Promoted && e.At == p.At && e.Node == p.Node && e.From == p.Old
		}) {
			errf("promotion of %s in place of %s at %v: no such event", p.Node, p.Old, p.At)
		}
	}
	for _, a := range res.History.Accesses {
		if a.Kind != "write" {
			continue
		}
		label := fenceLabel(a)
		var x, y int64
		if n, _ := fmt.Sscanf(label, "%d ≥ %d ✓", &x, &y); n == 2 && (!a.Accepted || x < y || x != a.Fence || y != a.Highest) {
			errf("store label %q for a write the store decided accepted=%v with token %d against %d", label, a.Accepted, a.Fence, a.Highest)
		}
		if n, _ := fmt.Sscanf(label, "%d < %d ✗", &x, &y); n == 2 && (a.Accepted || x >= y) {
			errf("store label %q for a write the store decided accepted=%v", label, a.Accepted)
		}
	}
	return errs
}

// The checks above do catch a lane drawn from the wrong node: moving the
// first replication arrow's master, or a key bar to another node, is
// reported.
func TestDrawnCheckCatchesTheWrongNode(t *testing.T) {
	bubblehost.Bind(t)
	s, err := scenarios.Get("wait-one-of-two-failover")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(s, s.Seed, scenarios.Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	m := deriveMechanism(res)
	if errs := drawnMismatches(res, m); len(errs) > 0 {
		t.Fatalf("the run's own drawing fails: %v", errs)
	}
	if len(m.Repl) == 0 || len(m.Nodes) < 2 {
		t.Fatal("no replication drawn in the failover lesson")
	}
	last := &m.Repl[len(m.Repl)-1]
	if last.From == "A" {
		t.Fatalf("the last replication of the failover lesson is drawn from A: %+v", *last)
	}
	last.From = "A"
	if errs := drawnMismatches(res, m); len(errs) == 0 {
		t.Error("a replication arrow drawn from A after A's failover passed the check")
	}
	m = deriveMechanism(res)
	var from, to string
	for _, n := range m.Nodes {
		if len(m.Keys[n]) > 0 && from == "" {
			from = n
		} else if to == "" {
			to = n
		}
	}
	m.Keys[to] = append(m.Keys[to], m.Keys[from]...)
	if errs := drawnMismatches(res, m); len(errs) == 0 {
		t.Errorf("%s's key bars drawn on %s passed the check", from, to)
	}
}

// The fenced twin of the Redlock clock-jump lesson holds with 3 of 5
// Redlock nodes: the fencing token store is a Redis node but no voter.
func TestFencedRedlockCountsOnlyRedlockNodes(t *testing.T) {
	bubblehost.Bind(t)
	s, err := scenarios.Get("redlock-clock-jump-fenced")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(s, s.Seed, scenarios.Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	m := deriveMechanism(res)
	if len(m.Nodes) != 6 || len(m.Voters) != 5 {
		t.Fatalf("nodes %v, voters %v; want the 5 Redlock nodes as voters beside the token store", m.Nodes, m.Voters)
	}
	for _, v := range m.Voters {
		if v == "T" {
			t.Fatalf("the token store T counted as a voter: %v", m.Voters)
		}
	}
	var tl strings.Builder
	if err := WriteRun(&tl, res, nil, ""); err != nil {
		t.Fatal(err)
	}
	page := tl.String()
	if strings.Contains(page, "/6 votes") || strings.Contains(page, "quorum 4") {
		t.Error("the report still counts 6 nodes and a quorum of 4")
	}
	if !strings.Contains(page, "/5 votes") || !strings.Contains(page, "quorum 3") {
		t.Error("the report draws no tally out of 5 with a quorum of 3")
	}
}

// runPage runs a catalogue scenario with its events kept and returns the
// result, its mechanism and its report page.
func runPage(t *testing.T, id string) (*scenarios.Result, *mechanism, string) {
	t.Helper()
	bubblehost.Bind(t)
	s, err := scenarios.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(s, s.Seed, scenarios.Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := WriteRun(&page, res, nil, ""); err != nil {
		t.Fatal(err)
	}
	return res, deriveMechanism(res), page.String()
}

// The stuck holder holds: the unavailable stretch names c1 as the holder
// that does not let go (the checker's Stuck), and each of the watchdog's
// renewals the node granted is drawn on c1's key.
func TestWatchdogStuckHolderDrawsHolderAndRenewals(t *testing.T) {
	res, m, page := runPage(t, "watchdog-stuck-holder")
	if strings.Contains(page, "nobody holds the lock") {
		t.Error(`the report says "nobody holds the lock" over c1's hold`)
	}
	if !strings.Contains(page, "c1 holds the lock without letting go") {
		t.Error("the report does not name c1 as the stuck holder")
	}
	granted := map[string]int{}
	for _, e := range res.Events {
		if e.Kind == event.CommandExecuted && strings.Contains(e.Command, "<compare-and-pexpire>") && e.Reply == ":1" {
			granted[e.Node]++
		}
	}
	drawn := map[string]int{}
	for n, spans := range m.Keys {
		for _, k := range spans {
			drawn[n] += len(k.Renewals)
			if len(k.Renewals) != k.Renewed {
				t.Errorf("%s's key on %s: %d renewals counted, %d drawn", k.Owner, n, k.Renewed, len(k.Renewals))
			}
		}
	}
	if len(granted) == 0 || fmt.Sprint(granted) != fmt.Sprint(drawn) {
		t.Errorf("renewals granted per node %v, drawn %v", granted, drawn)
	}
	if !strings.Contains(page, "key-renewal") {
		t.Error("no renewal ticks in the report")
	}
}

// The reentrant lesson's key reaches hold count 2 (the retried acquire
// counts twice): the bar says so, even though it ends at 1.
func TestReentrantDrawsTheCountReached(t *testing.T) {
	res, m, page := runPage(t, "reentrant-retry-double-count")
	// The count the node's script reached: acquires granted (nil reply)
	// for a token whose key was live, counted from the events.
	most := 0
	for _, spans := range m.Keys {
		for _, k := range spans {
			most = max(most, k.MaxCount)
		}
	}
	acquires := 0
	for _, e := range res.Events {
		if e.Kind == event.CommandExecuted && strings.Contains(e.Command, "<reentrant-acquire>") && e.Reply == "$-1" {
			acquires++
		}
	}
	if most < 2 || acquires < 2 {
		t.Fatalf("hold count drawn up to %d after %d granted acquires; the lesson's count reaches 2", most, acquires)
	}
	if !strings.Contains(page, fmt.Sprintf("count up to %d", most)) {
		t.Errorf("the key's label does not say count up to %d", most)
	}
}

// Above 12 clients the timeline keeps its mechanism: the ensemble herd
// (20 clients) draws every watch notification a client received, one per
// WATCH frame event.
func TestHerdDrawsEveryWatchNotification(t *testing.T) {
	res, m, page := runPage(t, "zk-ensemble-herd")
	if res.Scenario.Clients.Count <= 12 {
		t.Fatalf("the herd has %d clients; this test is about more than 12", res.Scenario.Clients.Count)
	}
	watches := 0
	for _, e := range res.Events {
		if e.Kind == event.FrameReceived && strings.HasPrefix(e.Command, "WATCH ") && e.Actor == e.Client {
			watches++
		}
	}
	// Above 12 clients each client's notifications are one path whose
	// tooltip counts them.
	drawn := 0
	for _, chunk := range strings.SplitAfter(page, " watch notifications to ") {
		j := strings.LastIndexAny(chunk[:len(chunk)-len(" watch notifications to ")], "\"> ")
		if !strings.HasSuffix(chunk, " watch notifications to ") || j < 0 {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(chunk[j+1:], "%d", &n); err == nil {
			drawn += n
		}
	}
	if watches == 0 || len(m.Notifies) != watches || drawn != watches {
		t.Fatalf("%d WATCH frames received, %d derived, %d drawn", watches, len(m.Notifies), drawn)
	}
}
