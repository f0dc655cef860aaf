package reports

import (
	"testing"
	"time"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim/event"
)

// A fault's drawn extent is its events': a hang ends at its worker's
// process.continued and a pause at its host's host.resumed even when the
// configured length says otherwise, a node's downtime at its restart; a
// pause the run never ended lasts to the run's end, a hang for good and a
// partition nothing healed never heal; a drop rule's window, which no
// event closes, keeps its own length.
func TestFaultSpanEndsAtItsEvent(t *testing.T) {
	s := time.Second
	applied := func(kind faults.Kind, target string, at, until time.Duration) faults.Applied {
		f := faults.Fault{Kind: kind, Target: target}
		return faults.Applied{At: at, Until: until, Fault: f, Text: f.String()}
	}
	ev := func(at time.Duration, kind event.Kind, actor string, a *faults.Applied) event.Event {
		e := event.Event{At: at, Kind: kind, Actor: actor, Node: actor}
		if a != nil {
			e.Actor, e.Fault = "faults", a.Text
		}
		return e
	}
	hang := applied(faults.Hang, "c1", 1*s, 6*s) // continued at 5s: the event wins
	pause := applied(faults.Pause, "c2", 2*s, 9*s)
	crash := applied(faults.NodeCrash, "A", 3*s, 4*s)
	forever := applied(faults.Hang, "c3", 1*s, 0)
	drop := applied(faults.Drop, "c1", 1*s, 2*s)
	events := []event.Event{
		ev(1*s, event.FaultApplied, "", &hang), ev(1*s, event.ProcessHung, "c1", nil),
		ev(1*s, event.ProcessHung, "c3", nil), ev(1*s, event.FaultApplied, "", &forever),
		ev(1*s, event.FaultApplied, "", &drop),
		ev(2*s, event.HostPaused, "c2", nil), ev(2*s, event.FaultApplied, "", &pause),
		ev(3*s, event.FaultApplied, "", &crash), ev(3*s, event.NodeCrashed, "A", nil),
		ev(4*s, event.NodeRestarted, "A", nil),
		ev(5*s, event.ProcessContinued, "c1", nil),
	}
	end := 7 * s
	for _, tc := range []struct {
		a       faults.Applied
		until   time.Duration
		forever bool
		ids     []int
	}{
		{hang, 5 * s, false, []int{0, 1, 10}},
		{pause, end, false, []int{6, 5}}, // resumed after the run's end
		{crash, 4 * s, false, []int{7, 8, 9}},
		{forever, end, true, []int{3, 2}},
		{drop, 2 * s, false, []int{4}},
	} {
		sp := readFaultSpan(events, tc.a, end)
		if sp.Until != tc.until || sp.Forever != tc.forever || eventIDs(sp.ids()) != eventIDs(tc.ids) {
			t.Errorf("%s: drawn to %v (forever %v) from events %v; want %v (%v) from %v", tc.a.Text, sp.Until, sp.Forever, sp.ids(), tc.until, tc.forever, tc.ids)
		}
	}
}
