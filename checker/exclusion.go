package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Overlap witnesses a mutual-exclusion violation: two holds, of two clients
// or of one client twice, that overlap during [From, To). For a semaphore
// of Permits permits, Holders names all Permits+1 holds that overlap during
// [From, To) (First is the earliest of them, Second the one that began at
// From and made one holder too many).
type Overlap struct {
	First   Interval      `json:"first"`
	Second  Interval      `json:"second"`
	From    time.Duration `json:"from_ns"`
	To      time.Duration `json:"to_ns"`
	Permits int           `json:"permits,omitempty"`
	Holders []Interval    `json:"holders,omitempty"`
}

func (o *Overlap) String() string {
	if len(o.Holders) > 0 {
		return o.crowdString()
	}
	from, to := SecSpan(o.From, o.To)
	if o.First.Client == o.Second.Client {
		return fmt.Sprintf("%s held [%s, %s) (%s) and, again, [%s, %s) (%s): two holds by one client during [%s, %s)",
			o.First.Client, Sec(o.First.Start), Sec(o.First.End), o.First.EndReason,
			Sec(o.Second.Start), Sec(o.Second.End), o.Second.EndReason,
			from, to)
	}
	return fmt.Sprintf("%s held [%s, %s) (%s) and %s held [%s, %s) (%s): both held during [%s, %s)",
		o.First.Client, Sec(o.First.Start), Sec(o.First.End), o.First.EndReason,
		o.Second.Client, Sec(o.Second.Start), Sec(o.Second.End), o.Second.EndReason,
		from, to)
}

// SecSpan renders the ends of a span [from, to) as Sec does, unless the
// span is shorter than 10 ms and its ends are not whole milliseconds:
// then in microseconds (nanoseconds when they are not whole microseconds
// either). Rounded to milliseconds an overlap of 0.7 ms read [2.036s,
// 2.036s), which looks like no overlap at all (issue 31, item 5).
func SecSpan(from, to time.Duration) (string, string) {
	digits := 3
	whole := func(unit time.Duration) bool { return from%unit == 0 && to%unit == 0 }
	if d := to - from; d > 0 && d < 10*time.Millisecond && !whole(time.Millisecond) {
		digits = 6
		if !whole(time.Microsecond) {
			digits = 9
		}
	}
	return fmt.Sprintf("%.*fs", digits, from.Seconds()), fmt.Sprintf("%.*fs", digits, to.Seconds())
}

// checkExclusion decides "no more holders than the primitive allows" with
// porcupine and names the first crowd with the exact sweep: a mutex (one
// holder), a semaphore of permits > 1 permits, or, when any hold is a
// reader's, a reader-writer lock. The two must agree; if they ever do not,
// the verdict is unknown rather than a guess.
func checkExclusion(h History, permits int) (Status, *Overlap, porcupine.CheckResult, []porcupine.Operation, porcupine.Model) {
	ops := mutexOperations(h.Intervals)
	model, sweep := exclusionModel(h.Intervals, permits)
	// No timeout (0): the search over hold instants is linear, so it always
	// finishes, and its answer cannot depend on the machine's speed.
	res := porcupine.CheckOperationsTimeout(model, ops, 0)
	o := sweep(h.Intervals)
	switch {
	case res == porcupine.Illegal && o != nil:
		return Violated, o, res, ops, model
	case res == porcupine.Ok && o == nil:
		return OK, nil, res, ops, model
	}
	return Unknown, o, res, ops, model
}

// exclusionModel picks the primitive's model and its exact sweep. A
// semaphore's holds are all alike (Mode is ignored); without permits, a
// history with a reader's hold is a reader-writer lock's, and one without
// is a mutex's, checked exactly as before readers existed.
func exclusionModel(in []Interval, permits int) (porcupine.Model, func([]Interval) *Overlap) {
	if permits > 1 {
		return semaphoreModel(permits), func(in []Interval) *Overlap { return FirstCrowd(in, permits) }
	}
	if hasReaders(in) {
		return rwModel, FirstConflict
	}
	return mutexModel, FirstOverlap
}

// FirstOverlap is the exact sweep: holds in order of their start, the
// earliest instant at which a hold begins while another (of any client,
// the same one included) has not yet ended. Empty holds are skipped; holds
// are half-open, so one ending at t and another beginning at t do not
// overlap. It returns nil when no two holds overlap.
func FirstOverlap(in []Interval) *Overlap {
	idx := make([]int, 0, len(in))
	for i, iv := range in {
		if iv.End > iv.Start {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := &in[a], &in[b]
		if c := cmp.Compare(x.Start, y.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(y.End, x.End); c != 0 {
			return c
		}
		return strings.Compare(x.Client, y.Client)
	})
	longest := -1 // the hold seen so far that ends last
	for _, k := range idx {
		b := in[k]
		if longest >= 0 && b.Start < in[longest].End {
			a := in[longest]
			return &Overlap{First: a, Second: b, From: b.Start, To: min(a.End, b.End)}
		}
		if longest < 0 || b.End > in[longest].End {
			longest = k
		}
	}
	return nil
}
