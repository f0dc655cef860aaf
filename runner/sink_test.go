package runner

import (
	"reflect"
	"testing"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

// Issue 32: --events and --trace stream through Options.Sink instead of a
// kept trace, and a report's kept trace is bounded by KeepBudget. The sink
// sees every event of the kept trace, in order, and neither changes the
// digest.
func TestSinkStreamsTheTraceAndKeepBudgetKeepsAPrefix(t *testing.T) {
	sc, err := scenarios.Load("redlock-clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := Run(sc, sc.Seed, Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	var streamed []event.Event
	var lines []string
	res, err := Run(sc, sc.Seed, Options{Sink: func(e *event.Event, text []byte) {
		streamed = append(streamed, *e)
		lines = append(lines, string(text))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.TraceSHA256 != kept.TraceSHA256 || res.Events != nil || !reflect.DeepEqual(streamed, kept.Events) {
		t.Fatalf("the sink saw %d events (kept run: %d), digest %s vs %s, kept %d", len(streamed), len(kept.Events), res.TraceSHA256, kept.TraceSHA256, len(res.Events))
	}
	for i, e := range kept.Trace {
		if lines[i] != e.Text {
			t.Fatalf("line %d: sink %q, trace %q", i, lines[i], e.Text)
		}
	}
	cut, err := Run(sc, sc.Seed, Options{KeepTrace: true, KeepBudget: kept.TraceKeptBytes / 2})
	if err != nil {
		t.Fatal(err)
	}
	if !cut.TraceTruncated || kept.TraceTruncated || cut.TraceSHA256 != kept.TraceSHA256 || len(cut.Events) == 0 || len(cut.Events) >= len(kept.Events) ||
		!reflect.DeepEqual(cut.Events, kept.Events[:len(cut.Events)]) || cut.TraceKeptBytes > kept.TraceKeptBytes/2 {
		t.Fatalf("budget %d: truncated %v, kept %d of %d events, %d bytes", kept.TraceKeptBytes/2, cut.TraceTruncated, len(cut.Events), len(kept.Events), cut.TraceKeptBytes)
	}
}
