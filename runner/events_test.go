package runner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
	"github.com/locklab/locklab/sim/event"
)

// eventsDigest runs id with its events kept and returns the SHA-256 of
// their JSON Lines.
func eventsDigest(t *testing.T, id string, seed uint64) (string, *Result) {
	t.Helper()
	s, err := scenarios.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, s, seed, Options{KeepTrace: true})
	var b bytes.Buffer
	if err := event.WriteJSONLines(&b, r.Events); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:]), r
}

// eventScenarios are runs whose events are compared across processes: a
// Redlock clock jump (the example), a failover with replication,
// and a run of the real go-zookeeper client in a bubble.
var eventScenarios = []string{"redlock-clock-jump", "wait-one-of-two-failover", "zk-ensemble-leader-crash"}

// TestEventsChild is the child of TestEventsSameAtAnyGOMAXPROCS: it prints
// the events digest of each scenario, one per line.
func TestEventsChild(t *testing.T) {
	if os.Getenv("LOCKLAB_EVENTS_CHILD") == "" {
		t.Skip("run by TestEventsSameAtAnyGOMAXPROCS")
	}
	bubblehost.Bind(t)
	for _, id := range eventScenarios {
		d, _ := eventsDigest(t, id, 7)
		os.Stdout.WriteString("events " + id + " " + d + "\n")
	}
}

// One seed gives byte-identical events whatever GOMAXPROCS is (and, when
// this test runs under -race, in a race-enabled child too): the events are
// as deterministic as the trace they render to.
func TestEventsSameAtAnyGOMAXPROCS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two child processes")
	}
	var outs []string
	for _, procs := range []string{"1", "4"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestEventsChild$", "-test.count", "1")
		cmd.Env = append(os.Environ(), "LOCKLAB_EVENTS_CHILD=1", "GOMAXPROCS="+procs)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child at GOMAXPROCS=%s: %v\n%s", procs, err, out)
		}
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "events ") {
				lines = append(lines, l)
			}
		}
		if len(lines) != len(eventScenarios) {
			t.Fatalf("child at GOMAXPROCS=%s printed %d digests, want %d:\n%s", procs, len(lines), len(eventScenarios), out)
		}
		outs = append(outs, strings.Join(lines, "\n"))
	}
	if outs[0] != outs[1] {
		t.Fatalf("events differ between GOMAXPROCS 1 and 4:\n%s\n---\n%s", outs[0], outs[1])
	}
}

// Keeping events changes nothing about the run: the digest with events
// kept equals the digest of a run that keeps nothing, the text trace is
// the events rendered one by one, and every event has a kind.
func TestEventsDoNotChangeTheDigest(t *testing.T) {
	bubblehost.Bind(t)
	for _, id := range eventScenarios {
		s, err := scenarios.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		plain := mustRun(t, s, 7, Options{})
		_, kept := eventsDigest(t, id, 7)
		if plain.TraceSHA256 != kept.TraceSHA256 {
			t.Errorf("%s: digest %s without events, %s with them", id, plain.TraceSHA256, kept.TraceSHA256)
		}
		if len(kept.Events) != len(kept.Trace) || len(kept.Events) != kept.TraceLines {
			t.Fatalf("%s: %d events, %d trace lines, %d counted", id, len(kept.Events), len(kept.Trace), kept.TraceLines)
		}
		for i, e := range kept.Events {
			if e.Kind == "" {
				t.Fatalf("%s: event %d has no kind", id, i)
			}
			if got, want := e.Text(), kept.Trace[i].Text; got != want || e.At != kept.Trace[i].At || e.Actor != kept.Trace[i].Actor {
				t.Fatalf("%s: event %d renders %q by %s at %v, the trace says %q by %s at %v", id, i, got, e.Actor, e.At, want, kept.Trace[i].Actor, kept.Trace[i].At)
			}
		}
	}
}

// No event the simulator writes itself is an untyped note: notes are for
// lines other code adds through World.Tracef.
func TestCatalogueEventsAreTyped(t *testing.T) {
	bubblehost.Bind(t)
	all, _ := scenarios.Catalogue()
	for _, s := range all {
		if s.Clients.Count > 20 || strings.HasPrefix(s.Algorithm, "zk-") {
			continue // the single-server ZooKeeper is being retired (issue 21 item 5)
		}
		r := mustRun(t, s, 7, Options{KeepTrace: true})
		for _, e := range r.Events {
			if e.Kind == event.Note {
				t.Errorf("%s: untyped note %q by %s at %v", s.ID, e.Note, e.Actor, e.At)
				break
			}
		}
	}
}
