package sim

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/locklab/locklab/sim/event"
)

// Trace is the run's record: typed events (package event), each rendered
// to one text line that goes into a SHA-256 digest. Events and lines are
// kept only when Keep is set (reports want them, a thousand exploration
// runs do not).
type Trace struct {
	Keep bool
	// Off skips tracing altogether (no digest): exploration and shrinking
	// run thousands of runs whose traces nobody reads; the counterexample is
	// run again with tracing on.
	Off bool
	// Events are the run's facts, in trace order (kept with Keep).
	Events []event.Event
	// Entries are the same events rendered as text lines, for people.
	Entries []TraceEntry
	// Sink, when set, receives every event in trace order with its text
	// line (without time and actor; valid only during the call), so a
	// writer can stream the record to disk instead of keeping it in memory
	// (locklab run --events, --trace).
	Sink func(e *event.Event, text []byte)
	// KeepBudget bounds the bytes Keep may hold (0: no bound): once the
	// events and lines kept would pass it, keeping stops, the digest goes
	// on, and KeptEvents says how many were kept. A report of a run that
	// long is refused by its caller instead of growing without bound.
	KeepBudget int64
	// KeptBytes is what Keep holds, counted as KeepBudget counts it.
	KeptBytes int64
	// Truncated is set once KeepBudget stopped the keeping.
	Truncated bool
	h         hash.Hash
	n         int
	buf       []byte
	// sorted (a bubble run) holds events back until the kernel's next
	// step and sorts them: goroutines racing at one instant write them in
	// any order.
	sorted  bool
	pending []heldEvent
}

// heldEvent is an event of a bubble run waiting to be sorted, with its
// rendered line (the sort's last key).
type heldEvent struct {
	e    event.Event
	text string
}

// TraceEntry is one line of the text trace: an event rendered.
type TraceEntry struct {
	At    time.Duration `json:"at_ns"`
	Actor string        `json:"actor"`
	Text  string        `json:"text"`
}

func (e TraceEntry) String() string {
	return fmt.Sprintf("%12.6f %-10s %s", e.At.Seconds(), e.Actor, e.Text)
}

// NewTrace returns an empty trace that keeps its events.
func NewTrace() *Trace { return &Trace{Keep: true, h: sha256.New()} }

// add records one event: its line is rendered straight into a reused
// buffer, as tracing is on the hot path of every simulated command.
func (t *Trace) add(e *event.Event) {
	if t.Off {
		return
	}
	t.n++
	if t.sorted {
		t.pending = append(t.pending, heldEvent{*e, string(e.AppendText(nil))})
		return
	}
	b := strconv.AppendInt(t.buf[:0], int64(e.At), 10)
	b = append(b, ' ')
	b = append(b, e.Actor...)
	b = append(b, ' ')
	start := len(b)
	b = e.AppendText(b)
	if t.Sink != nil {
		t.Sink(e, b[start:])
	}
	if t.Keep && t.room(e, len(b)-start) {
		t.Events = append(t.Events, *e)
		t.Entries = append(t.Entries, TraceEntry{At: e.At, Actor: e.Actor, Text: string(b[start:])})
	}
	b = append(b, '\n')
	t.h.Write(b)
	t.buf = b
}

// flush writes the held-back events of a bubble run, sorted by time, actor
// and rendered line.
func (t *Trace) flush() {
	if len(t.pending) == 0 {
		return
	}
	slices.SortStableFunc(t.pending, func(a, b heldEvent) int {
		if c := cmp.Compare(a.e.At, b.e.At); c != 0 {
			return c
		}
		if c := cmp.Compare(a.e.Actor, b.e.Actor); c != 0 {
			return c
		}
		return cmp.Compare(a.text, b.text)
	})
	for _, p := range t.pending {
		b := strconv.AppendInt(t.buf[:0], int64(p.e.At), 10)
		b = append(b, ' ')
		b = append(b, p.e.Actor...)
		b = append(b, ' ')
		b = append(b, p.text...)
		b = append(b, '\n')
		t.h.Write(b)
		t.buf = b
		if t.Sink != nil {
			t.Sink(&p.e, []byte(p.text))
		}
		if t.Keep && t.room(&p.e, len(p.text)) {
			t.Events = append(t.Events, p.e)
			t.Entries = append(t.Entries, TraceEntry{At: p.e.At, Actor: p.e.Actor, Text: p.text})
		}
	}
	t.pending = t.pending[:0]
}

// keptEventBytes is what one kept event costs besides its strings: the
// Event and the TraceEntry values themselves.
const keptEventBytes = int64(unsafe.Sizeof(event.Event{}) + unsafe.Sizeof(TraceEntry{}))

// room reports whether one more event, with a text line of n bytes, fits
// in KeepBudget, and counts it when it does. The count is the event's
// structs, its text line and its strings (an estimate of the heap it
// holds); once one event does not fit, none after it is kept, so what is
// kept is always a prefix of the trace.
func (t *Trace) room(e *event.Event, n int) bool {
	if t.Truncated {
		return false
	}
	size := keptEventBytes + int64(n) + int64(len(e.Actor)+len(e.Node)+len(e.From)+len(e.To)+len(e.Client)+len(e.Command)+len(e.Reply)+len(e.Note)+len(e.Reason))
	for _, a := range e.Args {
		size += int64(len(a)) + 16
	}
	if t.KeepBudget > 0 && t.KeptBytes+size > t.KeepBudget {
		t.Truncated = true
		return false
	}
	t.KeptBytes += size
	return true
}

// Len is the number of events traced so far.
func (t *Trace) Len() int { return t.n }

// SHA256 is the hex digest of every line traced so far.
func (t *Trace) SHA256() string {
	t.flush()
	return hex.EncodeToString(t.h.Sum(nil))
}
