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
)

// Trace is the run's event log. Every line goes into a SHA-256 digest; the
// lines themselves are kept only when Keep is set (reports want them, a
// thousand exploration runs do not).
type Trace struct {
	Keep bool
	// Off skips tracing altogether (no digest): exploration and shrinking
	// run thousands of runs whose traces nobody reads; the counterexample is
	// run again with tracing on.
	Off     bool
	Entries []TraceEntry
	h       hash.Hash
	n       int
	buf     []byte
	// sorted (a bubble run) holds lines back until the kernel's next
	// step and sorts them: goroutines racing at one instant write them in
	// any order.
	sorted  bool
	pending []TraceEntry
}

// TraceEntry is one line of the trace.
type TraceEntry struct {
	At    time.Duration `json:"at_ns"`
	Actor string        `json:"actor"`
	Text  string        `json:"text"`
}

func (e TraceEntry) String() string {
	return fmt.Sprintf("%12.6f %-10s %s", e.At.Seconds(), e.Actor, e.Text)
}

// NewTrace returns an empty trace that keeps its lines.
func NewTrace() *Trace { return &Trace{Keep: true, h: sha256.New()} }

// addf formats one line straight into a reused buffer: tracing is on the
// hot path of every simulated command.
func (t *Trace) addf(at time.Duration, actor, format string, args ...any) {
	if t.Off {
		return
	}
	t.n++
	if t.sorted {
		t.pending = append(t.pending, TraceEntry{At: at, Actor: actor, Text: fmt.Sprintf(format, args...)})
		return
	}
	b := strconv.AppendInt(t.buf[:0], int64(at), 10)
	b = append(b, ' ')
	b = append(b, actor...)
	b = append(b, ' ')
	start := len(b)
	b = fmt.Appendf(b, format, args...)
	if t.Keep {
		t.Entries = append(t.Entries, TraceEntry{At: at, Actor: actor, Text: string(b[start:])})
	}
	b = append(b, '\n')
	t.h.Write(b)
	t.buf = b
}

// flush writes the held-back lines of a bubble run, sorted by time, actor
// and text.
func (t *Trace) flush() {
	if len(t.pending) == 0 {
		return
	}
	slices.SortStableFunc(t.pending, func(a, b TraceEntry) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Actor, b.Actor); c != 0 {
			return c
		}
		return cmp.Compare(a.Text, b.Text)
	})
	for _, e := range t.pending {
		b := strconv.AppendInt(t.buf[:0], int64(e.At), 10)
		b = append(b, ' ')
		b = append(b, e.Actor...)
		b = append(b, ' ')
		b = append(b, e.Text...)
		b = append(b, '\n')
		t.h.Write(b)
		t.buf = b
		if t.Keep {
			t.Entries = append(t.Entries, e)
		}
	}
	t.pending = t.pending[:0]
}

// Len is the number of lines traced so far.
func (t *Trace) Len() int { return t.n }

// SHA256 is the hex digest of every line traced so far.
func (t *Trace) SHA256() string {
	t.flush()
	return hex.EncodeToString(t.h.Sum(nil))
}
