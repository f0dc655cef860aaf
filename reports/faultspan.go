package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim/event"
)

// A fault as its events tell it: the fault.applied that began it, what it
// did to its target at once (host.paused, process.hung, host.crashed, a
// node's or server's crash) and the event that ended it (host.resumed,
// process.continued, the restart, fault.healed or a heal). A pause or a
// hang is drawn to the event that ended it, not to its configured length:
// a host that is never resumed in the run stays paused to the run's end.
// The kinds are those sim/event/kinds.go lists for hosts, processes,
// nodes and servers.

// faultSpan is one applied fault's events (indexes in res.Events, -1:
// none) and its drawn extent.
type faultSpan struct {
	Applied, Effect, End int
	Until                time.Duration
	Forever              bool // nothing ends it: it lasts to the run's end
}

// ids are the span's events, the fault.applied first, for data-events.
func (s faultSpan) ids() []int {
	var out []int
	for _, id := range []int{s.Applied, s.Effect, s.End} {
		if id >= 0 {
			out = append(out, id)
		}
	}
	return out
}

// faultEffectKinds are the events a fault's target records when it takes
// effect, and endKinds those that end it, by the fault's kind.
var (
	faultEffectKinds = map[faults.Kind][]event.Kind{
		faults.Pause:     {event.HostPaused},
		faults.Hang:      {event.ProcessHung},
		faults.Crash:     {event.HostCrashed},
		faults.NodeCrash: {event.NodeCrashed, event.ServerCrashed, event.DBServerCrashed, event.EtcdMemberCrashed},
	}
	faultEndKinds = map[faults.Kind][]event.Kind{
		faults.Pause:     {event.HostResumed},
		faults.Hang:      {event.ProcessContinued},
		faults.NodeCrash: {event.NodeRestarted, event.ServerRestarted, event.DBServerRestarted, event.EtcdMemberStarted, event.FSServerRestarted},
	}
)

// onTarget: e is recorded by or about the fault's target.
func onTarget(e event.Event, target string) bool {
	return target != "" && (e.Actor == target || e.Node == target)
}

// spanOf reads a's span from the events. A partition with no end of its
// own ends at the next heal; a fault whose end is an event (a pause, a
// hang, a node crash with a restart) ends where that event is, or lasts to
// the run's end when the run has none; a drop rule's window ends by its
// own length (no event marks the end of a filter). Instantaneous faults
// end where they begin.
func (b *tlBuilder) spanOf(a faults.Applied) faultSpan {
	if s, ok := b.spans[a.At.String()+" "+a.Text]; ok {
		return s
	}
	s := readFaultSpan(b.res.Events, a, b.res.End)
	b.spans[a.At.String()+" "+a.Text] = s
	return s
}

func readFaultSpan(events []event.Event, a faults.Applied, end time.Duration) faultSpan {
	s := faultSpan{Applied: -1, Effect: -1, End: -1, Until: a.At}
	k := a.Fault.Kind
	for i, e := range events {
		switch {
		case e.At < a.At:
			continue
		case s.Applied < 0 && e.Kind == event.FaultApplied && e.At == a.At && e.Fault == a.Text:
			s.Applied = i
		case s.Effect < 0 && e.At == a.At && slices.Contains(faultEffectKinds[k], e.Kind) && onTarget(e, a.Fault.Target):
			// The target may record it before the fault's own record.
			s.Effect = i
		case s.End < 0 && e.At > a.At && slices.Contains(faultEndKinds[k], e.Kind) && onTarget(e, a.Fault.Target):
			s.End = i
		case s.End < 0 && k == faults.Partition && e.At > a.At &&
			(e.Kind == event.FaultHealed && e.Fault == a.Text || e.Kind == event.FaultApplied && strings.HasPrefix(e.Fault, "heal")):
			s.End = i
		}
	}
	switch {
	case s.End >= 0:
		s.Until = events[s.End].At
	case k == faults.Pause || k == faults.Hang || k == faults.NodeCrash || k == faults.Partition:
		// Nothing in the run ended it.
		s.Until, s.Forever = max(end, a.At), a.Until <= a.At
	case a.Until > a.At:
		s.Until = a.Until // a drop rule's window
	}
	return s
}

// faultLaneText is the fault's line above the rows: its text and its
// extent as the events give it.
func faultLaneText(a faults.Applied, s faultSpan) string {
	switch {
	case s.Forever:
		return fmt.Sprintf("fault: %s  (%s → end of run, never heals)", a.Text, checker.Sec(a.At))
	case s.Until > a.At && s.End < 0 && a.Until != s.Until:
		return fmt.Sprintf("fault: %s  (%s → end of run)", a.Text, checker.Sec(a.At))
	case s.Until > a.At:
		return fmt.Sprintf("fault: %s  (%s → %s)", a.Text, checker.Sec(a.At), checker.Sec(s.Until))
	}
	return fmt.Sprintf("fault: %s  (at %s)", a.Text, checker.Sec(a.At))
}

// firstID is ids' first element alone (a fault's start line names its
// fault.applied), or none.
func firstID(ids []int) []int {
	if len(ids) > 1 {
		return ids[:1]
	}
	return ids
}
