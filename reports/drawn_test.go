package reports

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
	"github.com/locklab/locklab/sim/event"
)

// drawnRun is one catalogue scenario's run with its derived mechanism.
type drawnRun struct {
	id  string
	res *runner.Result
	m   *mechanism
}

// catalogueRuns are the catalogue's runs at their own seeds, run once per
// test binary: TestDrawnElementsAreEvents and TestDrawnClaimsAreEvents
// read the same deterministic runs (same seed, same trace), and under
// -race each pass over the catalogue costs tens of seconds.
var catalogueRuns struct {
	sync.Mutex
	ids  []string
	runs []*runner.Result
}

func catalogueMechanisms(t *testing.T) []drawnRun {
	t.Helper()
	bubblehost.Bind(t)
	catalogueRuns.Lock()
	defer catalogueRuns.Unlock()
	if catalogueRuns.runs == nil {
		all, _ := scenarios.Catalogue()
		// Every scenario of the catalogue, the 101-client herds included:
		// above 12 clients the timeline keeps its mechanism (compact).
		for _, s := range all {
			res, err := runner.Run(s, s.Seed, runner.Options{KeepTrace: true})
			if err != nil {
				t.Fatalf("%s: %v", s.ID, err)
			}
			catalogueRuns.ids = append(catalogueRuns.ids, s.ID)
			catalogueRuns.runs = append(catalogueRuns.runs, res)
		}
	}
	// The mechanism is derived afresh for each caller: a test that draws
	// from it cannot change what the next one reads.
	var out []drawnRun
	for i, res := range catalogueRuns.runs {
		out = append(out, drawnRun{catalogueRuns.ids[i], res, deriveMechanism(res)})
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
	runs := catalogueMechanisms(t)
	if all, _ := scenarios.Catalogue(); len(runs) != len(all) {
		t.Fatalf("%d of the %d catalogue scenarios checked", len(runs), len(all))
	}
	for _, r := range runs {
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
func drawnMismatches(res *runner.Result, m *mechanism) []string {
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
					strings.Contains(e.Command, " "+key+" "+a.LockValue)
			}
			granted := has(func(e *event.Event) bool { return ran(e) && e.Reply == "+OK" })
			// A node that set the key granted it, whether or not its
			// reply reached the client (TestDrawnClaimsAreEvents checks
			// what the client heard).
			if (v.Got == voteYes || v.Got == voteUnheard) != granted {
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
					(e.Kind == event.CommandExecuted || e.Kind == event.ReplicationApplied) && strings.Contains(e.Command, k.LockValue))
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
	// Refused renewals: each drawn one is a compare-and-pexpire its node
	// answered 0 then, and each such answer is drawn.
	refused := 0
	for _, e := range res.Events {
		if e.Kind == event.CommandExecuted && strings.Contains(e.Command, "<compare-and-pexpire> 1 "+key+" ") && e.Reply == ":0" {
			refused++
		}
	}
	if refused != len(m.Refusals) {
		errf("%d renewals refused by a node, %d drawn", refused, len(m.Refusals))
	}
	for _, r := range m.Refusals {
		if !has(func(e *event.Event) bool {
			return e.Kind == event.CommandExecuted && e.Node == r.Node && e.At == r.At && e.Reply == ":0" &&
				strings.Contains(e.Command, "<compare-and-pexpire> 1 "+key+" "+r.LockValue)
		}) {
			errf("renewal of %s drawn refused by %s at %v: %s refused no such renewal then", r.Client, r.Node, r.At, r.Node)
		}
	}
	// Failed renewals: one drawn per event, on its client's lane.
	failed := 0
	for _, e := range res.Events {
		if e.Kind == event.RenewalFailed {
			failed++
		}
	}
	if failed != len(m.RenewFails) {
		errf("%d renewals failed, %d drawn", failed, len(m.RenewFails))
	}
	for _, f := range m.RenewFails {
		if !has(func(e *event.Event) bool {
			return e.Kind == event.RenewalFailed && e.Client == f.Client && e.At == f.At
		}) {
			errf("renewal failure drawn for %s at %v: no such event", f.Client, f.At)
		}
	}
	errs = append(errs, zkDrawnMismatches(res, m)...)
	for _, a := range res.History.Accesses {
		if a.Kind != "write" {
			continue
		}
		label := fenceLabel(a)
		var x, y int64
		if n, _ := fmt.Sscanf(label, "%d ≥ %d ✓", &x, &y); n == 2 && (!a.Accepted || x < y || x != a.FencingToken || y != a.Highest) {
			errf("store label %q for a write the store decided accepted=%v with token %d against %d", label, a.Accepted, a.FencingToken, a.Highest)
		}
		if n, _ := fmt.Sscanf(label, "%d < %d ✗", &x, &y); n == 2 && (a.Accepted || x >= y) {
			errf("store label %q for a write the store decided accepted=%v", label, a.Accepted)
		}
	}
	return errs
}

// zkDrawnMismatches checks the ZooKeeper lanes against the ensemble's
// events: a znode bar of client c is an ephemeral create c's connection
// was answered ok, and ends with c's own delete or the expiry of the
// session that made it; a watch notification drawn for c is a WATCH frame
// c received then; a session state of c starts with a frame or a
// connection event of c on the server it names; a server's role starts
// with that server's own event. And the other way: every ephemeral node
// a client was told it made, every notification it received and every
// expiry of a client's session is drawn.
func zkDrawnMismatches(res *runner.Result, m *mechanism) []string {
	var errs []string
	errf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	received := func(e *event.Event) bool { return e.Kind == event.FrameReceived && e.Actor == e.Client }
	createReply := func(e *event.Event) bool {
		return (e.Op == "CREATE" || e.Op == "CREATE2") && e.Reply == "ok" && e.Ephemeral && e.Dir == "reply"
	}
	created := func(e *event.Event) bool { return received(e) && createReply(e) }
	// untold: the server answered the create, the reply did not reach the
	// client (held by a cut, dropped by a fault, lost).
	untold := func(e *event.Event) bool {
		return (e.Kind == event.FrameHeld || e.Kind == event.MessageDropped || e.Kind == event.MessageLost) && createReply(e)
	}
	// session → the client whose connection was given it.
	owner := map[string]string{}
	for _, e := range res.Events {
		if received(&e) && e.Op == "CONNECT" && e.Session != "" {
			owner[e.Session] = e.Client
		}
	}
	has := func(match func(e *event.Event) bool) bool {
		for i := range res.Events {
			if match(&res.Events[i]) {
				return true
			}
		}
		return false
	}
	for _, z := range m.Znodes {
		if !z.Untold && !has(func(e *event.Event) bool {
			return created(e) && e.At == z.From && e.Client == z.Owner && e.Key == z.Path
		}) {
			errf("znode %s drawn for %s from %v: %s was not told it made it then", z.Path, z.Owner, z.From, z.Owner)
		}
		if z.Untold && !has(func(e *event.Event) bool {
			return untold(e) && e.At == z.From && e.Client == z.Owner && e.Key == z.Path
		}) {
			errf("znode %s drawn as made for %s at %v, its reply untold: no such reply held, dropped or lost then", z.Path, z.Owner, z.From)
		}
		if z.Adopted && (owner[z.AdoptedIn] != z.Owner || !has(func(e *event.Event) bool {
			return e.Kind == event.HoldBegan && e.Client == z.Owner && e.At == z.AdoptedAt && sameZnode(z.Path, e.LockValue)
		})) {
			errf("znode %s drawn adopted by %s at %v in session %s: no hold of %s on it then, or not %s's session", z.Path, z.Owner, z.AdoptedAt, z.AdoptedIn, z.Owner, z.Owner)
		}
		switch z.End {
		case "deleted":
			if !has(func(e *event.Event) bool {
				return received(e) && e.Op == "DELETE" && e.Reply == "ok" && e.At == z.To && e.Key == z.Path
			}) {
				errf("znode %s of %s drawn deleted at %v: no delete of it was answered then", z.Path, z.Owner, z.To)
			}
		case "session expired":
			if !has(func(e *event.Event) bool {
				return e.Kind == event.SessionExpired && e.At == z.To && owner[e.Session] == z.Owner
			}) {
				errf("znode %s of %s drawn ending with a session expiry at %v: no session of %s expired then", z.Path, z.Owner, z.To, z.Owner)
			}
		}
	}
	for _, n := range m.Notifies {
		if !has(func(e *event.Event) bool {
			return received(e) && e.Op == "WATCH" && e.At == n.At && e.Client == n.Client
		}) {
			errf("watch notification drawn for %s at %v: %s received none then", n.Client, n.At, n.Client)
		}
	}
	for _, x := range m.Expiries {
		if !has(func(e *event.Event) bool {
			return e.Kind == event.SessionExpired && e.At == x.At && owner[e.Session] == x.Client
		}) {
			errf("session expiry drawn for %s at %v: no session of %s expired then", x.Client, x.At, x.Client)
		}
	}
	for _, ss := range m.Sessions {
		var ok bool
		switch st, server, _ := strings.Cut(ss.State, " "); st {
		case "CONNECTED":
			ok = has(func(e *event.Event) bool {
				return received(e) && e.Op == "CONNECT" && e.Session != "" && e.At == ss.From && e.Client == ss.Client && e.Node == server
			})
		case "EXPIRED":
			ok = has(func(e *event.Event) bool {
				return received(e) && e.Op == "CONNECT" && e.Reply == "SESSIONEXPIRED" && e.At == ss.From && e.Client == ss.Client
			})
		case "DISCONNECTED":
			ok = has(func(e *event.Event) bool {
				return (e.Kind == event.ConnClosedBy || e.Kind == event.ConnReset) && e.At == ss.From && e.Client == ss.Client
			})
		default:
			ok = true // a state this check does not know yet
		}
		if !ok {
			errf("%s's connection drawn %s from %v: no such event of %s", ss.Client, ss.State, ss.From, ss.Client)
		}
	}
	for _, sv := range m.Servers {
		var kinds []event.Kind
		switch sv.State {
		case "leader":
			kinds = []event.Kind{event.LeaderAtStart, event.LeaderElected}
		case "follower":
			kinds = []event.Kind{event.ServerFollows}
		case "crashed":
			kinds = []event.Kind{event.ServerCrashed}
		case "not serving":
			kinds = []event.Kind{event.ServerStopped, event.ServerRestarted}
		}
		own := has(func(e *event.Event) bool {
			return e.At == sv.From && e.Node == sv.Server && slices.Contains(kinds, e.Kind)
		})
		// At the start the first leader's event makes the others followers.
		start := sv.State == "follower" && has(func(e *event.Event) bool {
			return e.At == sv.From && e.Kind == event.LeaderAtStart && e.Node != sv.Server
		})
		if !own && !start {
			errf("server %s drawn %s from %v: no such event of %s", sv.Server, sv.State, sv.From, sv.Server)
		}
	}
	// The other way round.
	drawnZ := map[string]bool{}
	for _, z := range m.Znodes {
		drawnZ[z.Owner+" "+z.Path] = true
	}
	drawnN := map[string]int{}
	for _, n := range m.Notifies {
		drawnN[fmt.Sprint(n.At, n.Client)]++
	}
	drawnX := map[string]int{}
	for _, x := range m.Expiries {
		drawnX[fmt.Sprint(x.At, x.Client)]++
	}
	for i := range res.Events {
		e := &res.Events[i]
		switch {
		case created(e) || untold(e):
			// Sequential paths are never given twice under one parent.
			if !drawnZ[e.Client+" "+e.Key] {
				errf("the server made ephemeral %s for %s (%s at %v): not drawn", e.Key, e.Client, e.Kind, e.At)
			}
		case received(e) && e.Op == "WATCH":
			if k := fmt.Sprint(e.At, e.Client); drawnN[k] == 0 {
				errf("watch notification %s %s received by %s at %v: not drawn", e.Reply, e.Key, e.Client, e.At)
			} else {
				drawnN[k]--
			}
		case e.Kind == event.SessionExpired && owner[e.Session] != "":
			if k := fmt.Sprint(e.At, owner[e.Session]); drawnX[k] == 0 {
				errf("session %s of %s expired at %v: not drawn", e.Session, owner[e.Session], e.At)
			} else {
				drawnX[k]--
			}
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
	res, err := runner.Run(s, s.Seed, runner.Options{KeepTrace: true})
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

	// ZooKeeper: a znode, a watch notification, a session state or a
	// server role drawn on another client's or server's lane.
	s, err = scenarios.Get("zk-ensemble-curator-604")
	if err != nil {
		t.Fatal(err)
	}
	res, err = runner.Run(s, s.Seed, runner.Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	if errs := drawnMismatches(res, deriveMechanism(res)); len(errs) > 0 {
		t.Fatalf("the CURATOR-604 run's own drawing fails: %v", errs)
	}
	other := func(c string) string {
		if c == "c1" {
			return "c2"
		}
		return "c1"
	}
	for _, c := range []struct {
		what  string
		spoil func(m *mechanism) bool
	}{
		{"a znode on another client's lane", func(m *mechanism) bool {
			if len(m.Znodes) == 0 {
				return false
			}
			m.Znodes[0].Owner = other(m.Znodes[0].Owner)
			return true
		}},
		{"a watch notification to another client", func(m *mechanism) bool {
			if len(m.Notifies) == 0 {
				return false
			}
			m.Notifies[0].Client = other(m.Notifies[0].Client)
			return true
		}},
		{"a session state on another server", func(m *mechanism) bool {
			for i, ss := range m.Sessions {
				if strings.HasPrefix(ss.State, "CONNECTED zk1") {
					m.Sessions[i].State = "CONNECTED zk2"
					return true
				}
			}
			return false
		}},
		{"a server role on another server", func(m *mechanism) bool {
			for i, sv := range m.Servers {
				if sv.State == "leader" {
					m.Servers[i].Server = "zk1"
					if sv.Server == "zk1" {
						m.Servers[i].Server = "zk2"
					}
					return true
				}
			}
			return false
		}},
	} {
		m := deriveMechanism(res)
		if !c.spoil(m) {
			t.Errorf("%s: the CURATOR-604 run draws nothing of the kind", c.what)
			continue
		}
		if errs := drawnMismatches(res, m); len(errs) == 0 {
			t.Errorf("%s passed the check", c.what)
		}
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
	res, err := runner.Run(s, s.Seed, runner.Options{KeepTrace: true})
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
func runPage(t *testing.T, id string) (*runner.Result, *mechanism, string) {
	t.Helper()
	bubblehost.Bind(t)
	s, err := scenarios.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(s, s.Seed, runner.Options{KeepTrace: true})
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

// watchdog-renews-foreign-key: the node refuses one renewal (the key holds
// another client's token); the report marks it on the node's lane.
func TestRefusedRenewalsAreDrawn(t *testing.T) {
	_, m, page := runPage(t, "watchdog-renews-foreign-key")
	if len(m.Refusals) == 0 {
		t.Fatal("no refused renewal derived")
	}
	r := m.Refusals[0]
	if r.Client == "" || !strings.Contains(page, fmt.Sprintf(`data-label="renewal refused %s %s %s"`, r.Node, r.Client, checker.Sec(r.At))) {
		t.Errorf("refusal %+v not drawn", r)
	}
	if !strings.Contains(page, "a renewal the node refused") {
		t.Error("no legend for refused renewals")
	}
}

// watchdog-partitioned: c1's watchdog, cut off from A, fails to renew and
// gives up; the report marks it on c1's lane (the lesson's instructor
// note: show the failed renewals on the client's lane).
func TestFailedRenewalsAreDrawn(t *testing.T) {
	res, m, page := runPage(t, "watchdog-partitioned")
	var fail *event.Event
	for i := range res.Events {
		if e := &res.Events[i]; e.Kind == event.RenewalFailed {
			fail = e
			break
		}
	}
	if fail == nil || fail.Client != "c1" || len(m.RenewFails) != 1 {
		t.Fatalf("failed renewal %+v, drawn %+v", fail, m.RenewFails)
	}
	if !strings.Contains(page, fmt.Sprintf(`data-label="renewal failed c1 %s"`, checker.Sec(fail.At))) {
		t.Error("c1's failed renewal is not drawn on its lane")
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

// CURATOR-604's point: c1's first session made node 1 (the create's reply
// was held by the cut, so c1 never heard), c1's second session adopts it
// by its GUID and holds, and the ensemble's expiry of the first session
// deletes it under c1. The report draws that node on c1's colour, dashed
// (untold), with the adoption marked at c1's hold; the fixed twin, which
// checks the node's owner, adopts nothing. In zk-lost-create-reply the
// node whose reply a fault dropped is the orphan that blocks the queue.
func TestZnodesWhoseReplyNeverCameAreDrawn(t *testing.T) {
	res, m, page := runPage(t, "zk-ensemble-curator-604")
	var adopted *znodeSpan
	for i := range m.Znodes {
		if z := &m.Znodes[i]; z.Owner == "c1" && z.Untold && z.Adopted {
			adopted = z
		}
	}
	if adopted == nil || adopted.End != "session expired" || adopted.Short != "1" {
		t.Fatalf("c1's adopted node not derived: %+v", m.Znodes)
	}
	var hold *event.Event
	for i := range res.Events {
		if e := &res.Events[i]; e.Kind == event.HoldBegan && e.Client == "c1" {
			hold = e
		}
	}
	if hold == nil || hold.At != adopted.AdoptedAt || !sameZnode(adopted.Path, hold.LockValue) {
		t.Fatalf("c1's hold %+v is not on the adopted node %+v", hold, adopted)
	}
	want := fmt.Sprintf(`data-label="adopted 1 c1 %s"`, checker.Sec(adopted.AdoptedAt))
	if !strings.Contains(page, want) || !strings.Contains(page, "adopted by c1&#39;s new session") {
		t.Errorf("the report does not mark the adoption (%s)", want)
	}
	if !strings.Contains(page, fmt.Sprintf(`data-label="znode 1 c1 %s session expired"`, checker.Sec(adopted.From))) {
		t.Error("the report does not draw c1's node 1 until its session expired")
	}

	_, m, _ = runPage(t, "zk-ensemble-curator-604-fixed")
	for _, z := range m.Znodes {
		if z.Adopted {
			t.Errorf("the fixed recipe adopted %+v", z)
		}
	}

	_, m, page = runPage(t, "zk-lost-create-reply")
	var orphan *znodeSpan
	for i := range m.Znodes {
		if z := &m.Znodes[i]; z.Owner == "c1" && z.Untold {
			orphan = z
		}
	}
	if orphan == nil || orphan.End != "end of run" || orphan.Adopted {
		t.Fatalf("c1's orphan not derived: %+v", m.Znodes)
	}
	if !strings.Contains(page, "reply never came") {
		t.Error("the orphan's label does not say its reply never came")
	}
}
