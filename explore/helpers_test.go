package explore

import (
	"testing"

	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

func mustRun(t testing.TB, s *scenarios.Scenario, seed uint64, opt runner.Options) *runner.Result {
	t.Helper()
	r, err := runner.Run(s, seed, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// eventsOf lists r's events of kind k.
func eventsOf(r *runner.Result, k event.Kind) []event.Event {
	var out []event.Event
	for _, e := range r.Events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}
