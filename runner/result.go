package runner

import (
	"maps"
	"slices"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim"
)

// Options tunes a run.
type Options struct {
	// KeepTrace keeps every trace line in the result (reports need them);
	// the digest is computed either way.
	KeepTrace bool
	// PlainLua turns off the native fast path for lock scripts, so every
	// EVAL runs in miniredis's Lua (for equivalence tests).
	PlainLua bool
	// CheckTimeout is ignored. The checker has no timeout any more: its
	// mutual-exclusion search is linear and always finishes, so no verdict
	// depends on machine speed (issue 10).
	//
	// Deprecated: ignored; kept so that older callers still compile.
	CheckTimeout time.Duration
	// NoTrace skips the event trace (and its digest) for speed.
	NoTrace bool
	// Sink, when set, receives every event of the run in trace order with
	// its text line (sim.Trace.Sink): locklab streams --events and --trace
	// through it, so they need no kept trace. RunCompared gives it to the
	// scenario's own run only.
	Sink func(e *event.Event, text []byte)
	// KeepBudget bounds the bytes KeepTrace holds (sim.Trace.KeepBudget;
	// 0: no bound); Result.TraceTruncated says when it ran out.
	KeepBudget int64
	// Direct hands go-redis's commands to the simulated nodes without
	// RESP framing on the client side (sim.ClientOptions.Direct): the same
	// run, digest and verdict, faster. Explore and matrix use it; run and
	// reports keep the wire path.
	Direct bool
	// Factory, when set, builds every client's lock instead of the
	// scenario's registered algorithm (a user's own lock).
	Factory algorithms.Factory
	// MaxWork is the run's work budget (default: the scenario's
	// Limits.Work): a run that does more work ends there, with a verdict
	// on the history so far and Result.Stopped set. Memory grows with the
	// work a run does; this bounds it whatever the file asks.
	MaxWork int
	// Bubble runs the world inside the calling testing/synctest bubble, for
	// lock code with goroutines and timers of its own (sim/bubble.go): a
	// Factory's lock, or an algorithm whose Info.Bubble is set, called
	// through Outside. Run sets it itself for such an algorithm, and opens
	// the bubble through package sim/bubblehost when the caller is not in
	// one.
	Bubble bool
	// Prepare, when set, is called with the run's seed before the world is
	// built (locktest seeds the process-wide random sources a library
	// draws from with it).
	Prepare func(seed uint64)
}

// Host describes one simulated host of a run, for reports.
type Host struct {
	Name   string            `json:"name"`
	Role   string            `json:"role"` // "client", "redis", "resource", or a backend's role
	Clock  []sim.ClockChange `json:"clock_changes,omitempty"`
	Offset time.Duration     `json:"offset_ns,omitempty"`
	PPM    int64             `json:"ppm,omitempty"`
}

// Result is everything a run produced.
type Result struct {
	Scenario *scenarios.Scenario `json:"-"`
	Seed     uint64              `json:"seed"`
	Report   *checker.Report     `json:"-"`
	History  checker.History     `json:"history"`
	Applied  []faults.Applied
	Hosts    []Host
	Metrics  []Metric
	// TraceSHA256 is the digest of the full event trace.
	TraceSHA256 string
	TraceLines  int
	Trace       []sim.TraceEntry
	// Events are the run's typed record (kept with KeepTrace); Trace is
	// these events rendered as text.
	Events []event.Event
	// TraceTruncated is set when Options.KeepBudget stopped the keeping:
	// Trace and Events then hold a prefix of the run's record, and the
	// digest still covers all of it. TraceKeptBytes is what was kept.
	TraceTruncated bool  `json:"-"`
	TraceKeptBytes int64 `json:"-"`
	Messages       int
	Dropped        int
	End            time.Duration
	// Work is the kernel's work in the run: events scheduled, messages
	// lost and bytes carried (sim/budget.go).
	Work int64
	// Stopped is set when a limit ended the run before its duration:
	// End is then the cut, and the verdict covers the history up to it.
	Stopped *Stop `json:"stopped,omitempty"`
	// Warnings name faults that changed nothing: never fired, or matched
	// no message.
	Warnings []string
	// DirectCommands counts the commands that took the direct path
	// (Options.Direct), for tests that it was taken.
	DirectCommands int `json:"-"`
}

// Matches reports whether every property the scenario asserts came out as
// expected.
func (r *Result) Matches() bool {
	e, v := r.Scenario.Expect, r.Report.Verdict
	return (e.MutualExclusion == "" || e.MutualExclusion == v.MutualExclusion) &&
		(e.Resource == "" || e.Resource == v.Resource) &&
		(e.Liveness == "" || e.Liveness == v.Liveness) &&
		len(r.MetricsOverBound()) == 0
}

// MetricsOverBound names, in order, the bounded metrics (at_most)
// that the run exceeded or did not report.
func (r *Result) MetricsOverBound() []string {
	var over []string
	for _, name := range slices.Sorted(maps.Keys(r.Scenario.AtMost)) {
		v, ok := r.Metric(name)
		if !ok || v > r.Scenario.AtMost[name] {
			over = append(over, name)
		}
	}
	return over
}

// Metric returns the backend metric called name, if the run reported it.
func (r *Result) Metric(name string) (int64, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}
