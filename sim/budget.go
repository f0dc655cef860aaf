package sim

// The work budget: every accepted input must end, with a verdict, in
// bounded memory (issue 25). No static check of a scenario bounds what its
// run does — a thousand clients retrying for a day, a drop rule that loses
// every request for a year, a ZooKeeper client that reconnects at once
// after every lost packet — and what a run keeps (the event queue, a
// node's append-only log, delays, the history) grows with what it does.
// So the kernel counts its own work and ends the run when the count passes
// a budget, exactly as if the run had reached its duration at that
// instant: the caller checks the history so far and says that the run was
// cut short, where, and by which limit.
//
// Work is what the kernel does on a run's behalf, counted where it costs:
// every event scheduled (a message's delivery, a reply, a delayed message
// — delayed ones are events too —, a timer, a sleep's wake-up, a fault
// firing, a replication batch), every message lost as it was sent (a
// partition or a drop rule: no event, but a sender that goes on retrying
// is still work), and the bytes messages carry where the service knows
// them (Message.Size), one unit per bytesPerWork. Cancelled timers count
// when scheduled: they sit in the queue until their time comes.

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/sim/event"
)

// Limits that end a run before its duration (Cut.Limit).
const (
	// LimitWork is the work budget (SetWorkLimit).
	LimitWork = "work"
	// LimitSameInstant is the bound on events at one instant of true time
	// (maxEventsPerInstant): a retry loop with no delay over a network
	// with no latency would spin at one instant for ever.
	LimitSameInstant = "same-instant"
)

// Cut says that a run ended before its duration because a limit tripped.
type Cut struct {
	// Limit is LimitWork or LimitSameInstant.
	Limit string
	// At is the true time of the cut: the history ends here.
	At time.Duration
	// Work is the work done when the limit tripped; Budget is the limit's
	// value (the work budget, or the events allowed at one instant).
	Work, Budget int64
}

func (c *Cut) String() string {
	switch c.Limit {
	case LimitSameInstant:
		return fmt.Sprintf("simulated time stopped at %v: more than %d events at the same instant (a retry loop with no delay and no latency?)", c.At, c.Budget)
	default:
		return fmt.Sprintf("the run used its work budget of %d kernel steps (events scheduled, messages lost, bytes carried) at %v", c.Budget, c.At)
	}
}

// SetWorkLimit bounds the work of the run (see the comment at the top of
// this file); 0 or less leaves it unbounded. Call it before Run.
func (w *World) SetWorkLimit(n int64) { w.workLimit = n }

// bytesPerWork is the bytes messages carry for one unit of work. What a
// service does with a message grows with its size (a ZooKeeper reply that
// lists a thousand children is built, traced and parsed byte by byte):
// 1000 gozk-lock clients on one lock exchanged 180 MB of frames in 2000
// acquisitions over 120,000 events, and ran past a minute within the
// budget when only events counted.
const bytesPerWork = 256

// Work is the work done so far: events scheduled, messages lost, and one
// unit per bytesPerWork bytes messages carried.
func (w *World) Work() int64 { return w.events + int64(w.Net.Dropped) + w.Net.Bytes/bytesPerWork }

// Events is the number of events scheduled so far.
func (w *World) Events() int64 { return w.events }

// Cut says why the run ended before its duration, or nil if it did not.
func (w *World) Cut() *Cut { return w.cut }

// overBudget reports whether the run has done more work than its budget.
func (w *World) overBudget() bool { return w.workLimit > 0 && w.Work() > w.workLimit }

// cutShort ends the run at the current instant because a limit tripped.
// The run then ends as at its duration: processes still alive are killed,
// end hooks run, and Run returns no error; the trace says where and why.
func (w *World) cutShort(limit string, budget int64) {
	if w.cut != nil {
		return
	}
	w.cut = &Cut{Limit: limit, At: w.now, Work: w.Work(), Budget: budget}
	w.Record("kernel", event.Event{Kind: event.RunCut, Reason: limit, Count: int(budget)})
}
