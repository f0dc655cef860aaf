package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// An excuse excuses only the waiters it names (issue 20, item 4): a
// partition between two parties unrelated to the lock leaves c2's wait
// blamed, and one that cuts c2 off excuses it; a window that names c3
// does not excuse c2, and c3's pause excuses only c3.
func TestExcuseIsTiedToItsWaiter(t *testing.T) {
	sec := time.Second
	// setnx-expire-crash: c1 dies before EXPIRE at 1s, c2 waits from 1s
	// to the end of the run at 31s (30s unavailable, bound 11s).
	h := History{
		Intervals: []Interval{iv("c1", 0, sec, "crash")},
		Wants:     []Want{{Client: "c2", From: sec, To: 31 * sec, Outcome: "end of run"}},
		End:       31 * sec,
	}
	unrelated := Window{From: 2 * sec, To: 30 * sec, Why: "partition c3|store"}
	r := Check(h, Options{LivenessBound: 11 * sec, Excused: []Window{unrelated}})
	if u := r.Witness.Liveness; r.Verdict.Liveness != Violated || u.Blamed != 30*sec || len(u.Excuses) != 0 {
		t.Fatalf("an unrelated 28s partition excused c2: %s %v", r.Verdict.Liveness, u)
	}
	other := Window{From: 2 * sec, To: 30 * sec, Waiters: []string{"c3"}, Why: "partition c3|A"}
	paused := Window{From: 2 * sec, To: 30 * sec, Client: "c3", Why: "paused"}
	if r := Check(h, Options{LivenessBound: 11 * sec, Excused: []Window{other, paused}}); r.Verdict.Liveness != Violated || r.Witness.Liveness.Blamed != 30*sec {
		t.Fatalf("c3's faults excused c2: %v", r.Witness.Liveness)
	}
	cut := Window{From: 2 * sec, To: 30 * sec, Waiters: []string{"c2"}, Why: "partition c2|A"}
	r = Check(h, Options{LivenessBound: 11 * sec, Excused: []Window{unrelated, cut}})
	if r.Verdict.Liveness != OK {
		t.Fatalf("the partition that cut c2 off did not excuse it: %v", r.Witness.Liveness)
	}
	// With a bound of 1s the witness shows c2's excuse, its interval and
	// its share, and not the unrelated partition.
	r = Check(h, Options{LivenessBound: sec, Excused: []Window{unrelated, cut}})
	u := r.Witness.Liveness
	want := []Excuse{{Why: "partition c2|A", Waiters: []string{"c2"}, From: 2 * sec, To: 30 * sec, Excused: 28 * sec}}
	if u == nil || u.Blamed != 2*sec || !slices.EqualFunc(u.Excuses, want, func(a, b Excuse) bool { return fmt.Sprint(a) == fmt.Sprint(b) && slices.Equal(a.Waiters, b.Waiters) }) {
		t.Fatalf("witness %v", u)
	}
	if s := u.String(); !strings.Contains(s, "partition c2|A 28s (kept c2 from the lock during [2.000s, 30.000s])") {
		t.Fatalf("witness text %q", s)
	}
	// Two waiters: the window that cuts c2 off excuses nothing while c4
	// waits, unblocked.
	h4 := h
	h4.Wants = append(slices.Clone(h.Wants), Want{Client: "c4", From: sec, To: 31 * sec, Outcome: "end of run"})
	if r := Check(h4, Options{LivenessBound: 11 * sec, Excused: []Window{cut}}); r.Verdict.Liveness != Violated || r.Witness.Liveness.Blamed != 30*sec || len(r.Witness.Liveness.Excuses) != 0 {
		t.Fatalf("c2's partition excused c4's wait: %v", r.Witness.Liveness)
	}
}

// referenceUnavailable is the liveness definition written out plainly:
// cut time at every edge, judge each elementary segment by scanning every
// hold, want and window, and keep the stretch with the most blamed time.
// Quadratic, and obviously right.
func referenceUnavailable(h History, windows []Window) (from, to, blamed time.Duration, waiting []string, ok bool) {
	points := []time.Duration{h.End}
	for _, iv := range h.Intervals {
		points = append(points, iv.Start, iv.End)
	}
	for _, wt := range h.Wants {
		points = append(points, wt.From, wt.To)
	}
	for _, w := range windows {
		points = append(points, w.From, w.To)
	}
	slices.Sort(points)
	points = slices.Compact(points)
	in := func(a, b, x time.Duration) bool { return a <= x && x < b }
	var cur, best *struct {
		from, to, blamed time.Duration
		waited           map[string]bool
	}
	for k := 0; k+1 < len(points) && points[k] < h.End; k++ {
		at, next := points[k], points[k+1]
		held := false
		for _, iv := range h.Intervals {
			held = held || in(iv.Start, iv.End, at)
		}
		wanting := map[string]bool{}
		for _, wt := range h.Wants {
			if in(wt.From, wt.To, at) {
				wanting[wt.Client] = true
			}
		}
		if held || len(wanting) == 0 {
			if cur != nil && (best == nil || cur.blamed > best.blamed) {
				best = cur
			}
			cur = nil
			continue
		}
		if cur == nil {
			cur = &struct {
				from, to, blamed time.Duration
				waited           map[string]bool
			}{from: at, waited: map[string]bool{}}
		}
		cur.to = next
		blame := false
		for c := range wanting {
			cur.waited[c] = true
			excused := false
			for _, w := range windows {
				excused = excused || (w.excuses(c) && in(w.From, w.To, at))
			}
			blame = blame || !excused
		}
		if blame {
			cur.blamed += next - at
		}
	}
	if cur != nil && (best == nil || cur.blamed > best.blamed) {
		best = cur
	}
	if best == nil {
		return 0, 0, 0, nil, false
	}
	for c := range best.waited {
		waiting = append(waiting, c)
	}
	sort.Strings(waiting)
	return best.from, best.to, best.blamed, waiting, true
}

// The O(n log n) sweep finds the stretch the plain definition finds, with
// the same blamed time and waiters, on random holds, wants, pauses and
// fault windows.
func TestSweepMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		clients := []string{"c1", "c2", "c3"}
		at := func(label string) time.Duration {
			return time.Duration(rapid.IntRange(0, 40).Draw(t, label)) * 250 * time.Millisecond
		}
		stretch := func(label string) (time.Duration, time.Duration) {
			a, b := at(label+".from"), at(label+".to")
			return min(a, b), max(a, b)
		}
		h := History{End: 10 * time.Second}
		for i := rapid.IntRange(0, 4).Draw(t, "holds"); i > 0; i-- {
			a, b := stretch("hold")
			h.Intervals = append(h.Intervals, Interval{Client: rapid.SampledFrom(clients).Draw(t, "holder"), Start: a, End: b})
		}
		for i := rapid.IntRange(0, 5).Draw(t, "wants"); i > 0; i-- {
			a, b := stretch("want")
			h.Wants = append(h.Wants, Want{Client: rapid.SampledFrom(clients).Draw(t, "waiter"), From: a, To: b})
		}
		var windows []Window
		for i := rapid.IntRange(0, 6).Draw(t, "windows"); i > 0; i-- {
			a, b := stretch("window")
			w := Window{From: a, To: b, Why: fmt.Sprintf("fault %d", i)}
			if rapid.Bool().Draw(t, "pause") {
				w.Client = rapid.SampledFrom(clients).Draw(t, "paused")
			} else {
				for _, c := range clients {
					if rapid.Bool().Draw(t, "excuses "+c) {
						w.Waiters = append(w.Waiters, c)
					}
				}
			}
			windows = append(windows, w)
		}
		from, to, blamed, waiting, ok := referenceUnavailable(h, windows)
		got := longestUnavailable(h, 0, windows)
		if (got != nil) != ok {
			t.Fatalf("sweep %v, reference found a stretch: %v", got, ok)
		}
		if got == nil {
			return
		}
		if got.From != from || got.To != to || got.Blamed != blamed || !slices.Equal(got.Waiting, waiting) {
			t.Fatalf("sweep [%v, %v] blamed %v waiting %v; reference [%v, %v] blamed %v waiting %v",
				got.From, got.To, got.Blamed, got.Waiting, from, to, blamed, waiting)
		}
		var shares time.Duration
		for _, e := range got.Excuses {
			shares = max(shares, e.Excused)
		}
		if shares > got.To-got.From-got.Blamed {
			t.Fatalf("an excuse's share %v exceeds the excused time %v", shares, got.To-got.From-got.Blamed)
		}
	})
}
