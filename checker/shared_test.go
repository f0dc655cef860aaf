package checker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// holdersAt counts the non-empty holds under way at instant t (half-open).
func holdersAt(in []Interval, t time.Duration) (readers, writers int) {
	for _, i := range in {
		if i.End > i.Start && i.Start <= t && t < i.End {
			if i.Shared() {
				readers++
			} else {
				writers++
			}
		}
	}
	return readers, writers
}

// crowdedBrute is the semaphore's definition, instant by instant: some
// hold's beginning sees more than permits holds under way.
func crowdedBrute(in []Interval, permits int) bool {
	for _, i := range in {
		if r, w := holdersAt(in, i.Start); i.End > i.Start && r+w > permits {
			return true
		}
	}
	return false
}

// conflictBrute is the reader-writer definition: at some hold's beginning a
// writer is under way together with anyone else.
func conflictBrute(in []Interval) bool {
	for _, i := range in {
		if r, w := holdersAt(in, i.Start); i.End > i.Start && w > 0 && r+w > 1 {
			return true
		}
	}
	return false
}

func drawHolds(t *rapid.T, modes bool) []Interval {
	n := rapid.IntRange(0, 12).Draw(t, "n")
	var in []Interval
	for k := 0; k < n; k++ {
		c := rapid.SampledFrom([]string{"c1", "c2", "c3", "c4"}).Draw(t, "client")
		s := time.Duration(rapid.IntRange(0, 30).Draw(t, "start")) * ms
		d := time.Duration(rapid.IntRange(0, 8).Draw(t, "len")) * ms
		i := iv(c, s, s+d, "release")
		if modes {
			i.Mode = rapid.SampledFrom([]string{ModeRead, ModeWrite, ModeRead}).Draw(t, "mode")
		}
		in = append(in, i)
	}
	return in
}

// checkWindow asserts that every named holder really holds all through the
// witness window and that each is a hold of the history.
func checkWindow(t *rapid.T, in []Interval, o *Overlap, named []Interval) {
	if o.From >= o.To {
		t.Fatalf("empty witness window in %v", o)
	}
	for _, x := range named {
		if !(x.Start <= o.From && o.To <= x.End) || !slices.Contains(in, x) {
			t.Fatalf("witness %v names %+v, which does not hold through the window", o, x)
		}
	}
}

// Over random histories, with simultaneous instants and one client holding
// more than once, the semaphore's porcupine model, its exact sweep and the
// definition agree, and the witness names permits+1 real holders.
func TestSemaphoreAgreesWithSweep(t *testing.T) {
	defer func(n int) { segmentOps = n }(segmentOps)
	rapid.Check(t, func(t *rapid.T) {
		segmentOps = rapid.SampledFrom([]int{1, 2, 3, 128}).Draw(t, "segment")
		permits := rapid.IntRange(2, 4).Draw(t, "permits")
		in := drawHolds(t, true) // modes are ignored by a semaphore
		r := Check(History{Intervals: in}, Options{Permits: permits})
		want := crowdedBrute(in, permits)
		if (r.Porcupine == "Illegal") != want || (r.Witness.MutualExclusion != nil) != want ||
			(r.Verdict.MutualExclusion == Violated) != want || !want && r.Verdict.MutualExclusion != OK {
			t.Fatalf("definition %v, porcupine %s, verdict %s, sweep %v", want, r.Porcupine, r.Verdict.MutualExclusion, r.Witness.MutualExclusion)
		}
		if o := r.Witness.MutualExclusion; o != nil {
			if len(o.Holders) != permits+1 || o.Permits != permits {
				t.Fatalf("witness names %d holders of %d permits: %v", len(o.Holders), permits, o)
			}
			checkWindow(t, in, o, o.Holders)
		}
	})
}

// Likewise for the reader-writer lock: porcupine, the sweep and the
// definition agree, and the witness pairs a writer with a real overlapper.
func TestReadWriteAgreesWithSweep(t *testing.T) {
	defer func(n int) { segmentOps = n }(segmentOps)
	rapid.Check(t, func(t *rapid.T) {
		segmentOps = rapid.SampledFrom([]int{1, 2, 3, 128}).Draw(t, "segment")
		in := drawHolds(t, true)
		r := Check(History{Intervals: in}, Options{})
		want := conflictBrute(in)
		if (r.Porcupine == "Illegal") != want || (r.Witness.MutualExclusion != nil) != want ||
			(r.Verdict.MutualExclusion == Violated) != want || !want && r.Verdict.MutualExclusion != OK {
			t.Fatalf("definition %v, porcupine %s, verdict %s, sweep %v", want, r.Porcupine, r.Verdict.MutualExclusion, r.Witness.MutualExclusion)
		}
		if o := r.Witness.MutualExclusion; o != nil {
			if o.First.Shared() && o.Second.Shared() {
				t.Fatalf("witness pairs two readers: %v", o)
			}
			checkWindow(t, in, o, []Interval{o.First, o.Second})
		}
	})
}

// Three holders of a two-permit semaphore: the witness names all three,
// their holds and the window where they overlap.
func TestSemaphoreWitnessNamesEveryHolder(t *testing.T) {
	in := []Interval{iv("c1", 0, 10*ms, "release"), iv("c2", 2*ms, 8*ms, "lost"), iv("c3", 5*ms, 20*ms, "release"), iv("c4", 10*ms, 12*ms, "release")}
	r := Check(History{Intervals: in}, Options{Permits: 2})
	o := r.Witness.MutualExclusion
	if r.Verdict.MutualExclusion != Violated || o == nil {
		t.Fatalf("verdict %s, witness %v", r.Verdict.MutualExclusion, o)
	}
	want := "3 holders of a 2-permit semaphore during [0.005s, 0.008s): c1 [0.000s, 0.010s) (release), c2 [0.002s, 0.008s) (lost), c3 [0.005s, 0.020s) (release)"
	if o.String() != want {
		t.Fatalf("witness\n%s\nwant\n%s", o, want)
	}
	if r := Check(History{Intervals: in}, Options{Permits: 3}); r.Verdict.MutualExclusion != OK {
		t.Fatalf("three permits: %s %v", r.Verdict.MutualExclusion, r.Witness.MutualExclusion)
	}
}

// Readers share; a writer who begins while a reader (paused, say) still
// holds is the violation, named with that reader.
func TestWriterOverlapsReader(t *testing.T) {
	r1, r2 := iv("r1", 0, 10*ms, "release"), iv("r2", 3*ms, 6*ms, "release")
	r1.Mode, r2.Mode = ModeRead, ModeRead
	w := iv("w1", 10*ms, 12*ms, "release")
	w.Mode = ModeWrite
	if r := Check(History{Intervals: []Interval{r1, r2, w}}, Options{}); r.Verdict.MutualExclusion != OK {
		t.Fatalf("readers then a writer: %s %v", r.Verdict.MutualExclusion, r.Witness.MutualExclusion)
	}
	w.Start = 8 * ms
	r := Check(History{Intervals: []Interval{r1, r2, w}}, Options{})
	o := r.Witness.MutualExclusion
	if r.Verdict.MutualExclusion != Violated || o == nil || o.First != r1 || o.Second != w || !strings.Contains(o.String(), "[0.008s, 0.010s)") {
		t.Fatalf("verdict %s, witness %v", r.Verdict.MutualExclusion, o)
	}
	var page strings.Builder
	if err := r.Visualize(&page); err != nil || !strings.Contains(page.String(), "(reader)") {
		t.Fatalf("visualization: %v", err)
	}
}

// A reader who writes breaks the resource check even if its value is
// right (others read beside it); the same write under a writer's hold is
// fine.
func TestReadersReadOnlyWritersWrite(t *testing.T) {
	r1 := iv("c1", 0, 10*ms, "release")
	r1.Mode = ModeRead
	h := History{Initial: 5, Intervals: []Interval{r1}, Accesses: []Access{
		{Seq: 1, At: 2 * ms, Client: "c1", Kind: "read", Value: 5, Accepted: true},
		{Seq: 2, At: 4 * ms, Client: "c1", Kind: "write", Value: 4, Based: 5, Accepted: true},
	}}
	r := Check(h, Options{})
	w := r.Witness.Resource
	if r.Verdict.Resource != Violated || w == nil || w.Kind != WriteUnderRead ||
		w.String() != "write under a read lock: c1 wrote 4 at 0.004s while it held [0.000s, 0.010s) only as a reader; readers read, only writers write" {
		t.Fatalf("verdict %s, witness %v", r.Verdict.Resource, w)
	}
	h.Intervals[0].Mode = ModeWrite
	if r := Check(h, Options{}); r.Verdict.Resource != OK {
		t.Fatalf("under a writer's hold: %s %v", r.Verdict.Resource, r.Witness.Resource)
	}
}

// Readers hand the lock to one another for 100 ms, never letting it be
// free: the writer waiting all along is starved, and the witness names the
// readers that came in ahead of it. With no reader arriving while it
// waits, a long wait is not starvation.
func TestWriterStarvation(t *testing.T) {
	var h History
	for k := 0; k < 10; k++ {
		r := iv(fmt.Sprintf("r%d", k%2+1), time.Duration(k)*10*ms, time.Duration(k)*10*ms+15*ms, "release")
		r.Mode = ModeRead
		h.Intervals = append(h.Intervals, r)
	}
	h.Wants = []Want{{Client: "w1", From: 5 * ms, To: 120 * ms, Outcome: "end of run", Mode: ModeWrite}}
	h.End = 120 * ms
	r := Check(h, Options{LivenessBound: 50 * ms})
	s := r.Witness.Starvation
	if r.Verdict.Liveness != Violated || s == nil || s.Writer != "w1" || len(s.Readers) != 9 || s.Readers[0].Start != 10*ms {
		t.Fatalf("verdict %s, witness %v", r.Verdict.Liveness, s)
	}
	if !strings.HasPrefix(s.String(), "writer w1 starved: it waited 115ms (bound 50ms) during [0.005s, 0.120s] (end of run) while readers kept coming in: r2 at 0.010s, r1 at 0.020s") {
		t.Fatalf("witness text %q", s)
	}
	h.Wants[0].From = 95 * ms // waits 25 ms: within the bound
	if r := Check(h, Options{LivenessBound: 50 * ms}); r.Verdict.Liveness != OK {
		t.Fatalf("a short wait: %s %v", r.Verdict.Liveness, r.Witness.Starvation)
	}
	h.Wants[0] = Want{Client: "w1", From: 100 * ms, To: 200 * ms, Outcome: "end of run", Mode: ModeWrite}
	if r := Check(h, Options{LivenessBound: 50 * ms}); r.Witness.Starvation != nil {
		t.Fatalf("no reader came in during the wait, yet %v", r.Witness.Starvation)
	}
}
