package checker

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

const ms = time.Millisecond

func iv(client string, start, end time.Duration, why string) Interval {
	return Interval{Client: client, AcquireCall: start - ms, Start: start, End: end, EndReason: why}
}

func TestMutualExclusion(t *testing.T) {
	cases := []struct {
		name string
		ivs  []Interval
		want Status
		pair []string
	}{
		{"serial", []Interval{iv("c1", 0, 10*ms, "release"), iv("c2", 10*ms, 20*ms, "release")}, OK, nil},
		{"overlap", []Interval{iv("c1", 0, 10*ms, "release"), iv("c2", 5*ms, 20*ms, "release"), iv("c3", 30*ms, 40*ms, "release")}, Violated, []string{"c1", "c2"}},
		{"nested", []Interval{iv("c1", 0, 100*ms, "end of run"), iv("c2", 20*ms, 30*ms, "release")}, Violated, []string{"c1", "c2"}},
		{"empty interval does not count", []Interval{iv("c1", 0, 10*ms, "release"), iv("c2", 5*ms, 5*ms, "validity")}, OK, nil},
		{"same client back to back", []Interval{iv("c1", 0, 10*ms, "release"), iv("c1", 10*ms, 20*ms, "release")}, OK, nil},
		{"same client twice at once", []Interval{iv("c1", 0, 10*ms, "release"), iv("c1", 5*ms, 20*ms, "release")}, Violated, []string{"c1", "c1"}},
		{"same start", []Interval{iv("c2", 5*ms, 6*ms, "release"), iv("c1", 5*ms, 9*ms, "release")}, Violated, []string{"c1", "c2"}},
		{"release and acquire at one instant, three clients", []Interval{iv("c1", 0, 5*ms, "release"), iv("c2", 5*ms, 8*ms, "release"), iv("c3", 8*ms, 9*ms, "crash")}, OK, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Check(History{Intervals: c.ivs}, Options{})
			if r.Verdict.MutualExclusion != c.want {
				t.Fatalf("verdict %s (porcupine %s), want %s", r.Verdict.MutualExclusion, r.Porcupine, c.want)
			}
			// porcupine and the sweep must agree.
			if (r.Porcupine == "Illegal") != (c.want == Violated) {
				t.Fatalf("porcupine says %s for %s", r.Porcupine, c.want)
			}
			if c.pair == nil {
				if r.Witness.MutualExclusion != nil {
					t.Fatalf("unexpected witness %v", r.Witness.MutualExclusion)
				}
				return
			}
			o := r.Witness.MutualExclusion
			if got := []string{o.First.Client, o.Second.Client}; !slices.Equal(got, c.pair) || o.From >= o.To {
				t.Fatalf("witness %v, want %v overlapping", o, c.pair)
			}
		})
	}
}

// The witness names the one client twice when it holds twice at once.
func TestSameClientWitnessText(t *testing.T) {
	r := Check(History{Intervals: []Interval{iv("c1", 0, 10*ms, "release"), iv("c1", 5*ms, 20*ms, "release")}}, Options{})
	if s := r.Witness.MutualExclusion.String(); !strings.Contains(s, "two holds by one client") || !strings.Contains(s, "[0.005s, 0.010s)") {
		t.Fatalf("witness %q", s)
	}
}

// overlapsBrute is the definition, pair by pair.
func overlapsBrute(in []Interval) bool {
	for i := range in {
		for j := i + 1; j < len(in); j++ {
			a, b := in[i], in[j]
			if a.End > a.Start && b.End > b.Start && a.Start < b.End && b.Start < a.End {
				return true
			}
		}
	}
	return false
}

// Over random histories — few clients, coarse times so that instants
// collide, empty holds, one client holding twice — porcupine, the sweep and
// the pairwise definition agree, and the witness is a real overlap.
func TestPorcupineAgreesWithSweep(t *testing.T) {
	defer func(n int) { segmentOps = n }(segmentOps)
	rapid.Check(t, func(t *rapid.T) {
		// Small segments too, so that cutting at quiet instants is tested
		// on these short histories.
		segmentOps = rapid.SampledFrom([]int{1, 2, 3, 128}).Draw(t, "segment")
		n := rapid.IntRange(0, 12).Draw(t, "n")
		var in []Interval
		for k := 0; k < n; k++ {
			c := rapid.SampledFrom([]string{"c1", "c2", "c3"}).Draw(t, "client")
			s := time.Duration(rapid.IntRange(0, 30).Draw(t, "start")) * ms
			d := time.Duration(rapid.IntRange(0, 8).Draw(t, "len")) * ms
			in = append(in, iv(c, s, s+d, "release"))
		}
		r := Check(History{Intervals: in}, Options{})
		want := overlapsBrute(in)
		if (r.Porcupine == "Illegal") != want || (r.Witness.MutualExclusion != nil) != want {
			t.Fatalf("definition %v, porcupine %s, sweep %v", want, r.Porcupine, r.Witness.MutualExclusion)
		}
		if want != (r.Verdict.MutualExclusion == Violated) || !want && r.Verdict.MutualExclusion != OK {
			t.Fatalf("verdict %s, definition says overlap=%v", r.Verdict.MutualExclusion, want)
		}
		if o := r.Witness.MutualExclusion; o != nil {
			for _, x := range []Interval{o.First, o.Second} {
				if !(x.Start <= o.From && o.To <= x.End && o.From < o.To) {
					t.Fatalf("witness window [%v, %v) not inside %+v", o.From, o.To, x)
				}
			}
			if !slices.Contains(in, o.First) || !slices.Contains(in, o.Second) || o.First == o.Second && countOf(in, o.First) < 2 {
				t.Fatalf("witness %v is not a pair of the history", o)
			}
		}
	})
}

func countOf(in []Interval, x Interval) int {
	n := 0
	for _, i := range in {
		if i == x {
			n++
		}
	}
	return n
}

// serialHistory is n back-to-back holds of a few clients, every one
// ending exactly when the next begins.
func serialHistory(n int) History {
	var h History
	for k := 0; k < n; k++ {
		c := fmt.Sprintf("c%d", k%7+1)
		s := time.Duration(k) * 3 * ms
		h.Intervals = append(h.Intervals, Interval{Client: c, AcquireCall: s - 2*ms, Start: s, End: s + 3*ms, EndReason: "release"})
	}
	h.End = time.Duration(n) * 3 * ms
	return h
}

// The case: a fault-free run with 10,000 acquisitions was
// "unknown" under porcupine's timeout. Now it is decided, on any machine.
func TestLongSerialHistoryIsDecided(t *testing.T) {
	h := serialHistory(10_000)
	r := Check(h, Options{})
	if r.Verdict.MutualExclusion != OK || r.Porcupine != "Ok" {
		t.Fatalf("verdict %s, porcupine %s", r.Verdict.MutualExclusion, r.Porcupine)
	}
	// One overlap at the very end is found and named.
	last := &h.Intervals[len(h.Intervals)-1]
	last.End += ms
	h.Intervals = append(h.Intervals, Interval{Client: "c9", Start: last.End - ms, End: last.End + 5*ms, EndReason: "release"})
	r = Check(h, Options{})
	if r.Verdict.MutualExclusion != Violated || r.Porcupine != "Illegal" || r.Witness.MutualExclusion.Second.Client != "c9" {
		t.Fatalf("verdict %s, porcupine %s, witness %v", r.Verdict.MutualExclusion, r.Porcupine, r.Witness.MutualExclusion)
	}
}

func access(seq int, client, kind string, value, based, fence int64, ok bool) Access {
	return Access{Seq: seq, At: time.Duration(seq) * ms, Client: client, Kind: kind, Value: value, Based: based, FencingToken: fence, Accepted: ok}
}

func TestResource(t *testing.T) {
	serial := []Access{
		access(1, "c1", "read", 100, 0, 0, true), access(2, "c1", "write", 99, 100, 0, true),
		access(3, "c2", "read", 99, 0, 0, true), access(4, "c2", "write", 98, 99, 0, true),
	}
	r := Check(History{Initial: 100, Accesses: serial}, Options{})
	if r.Verdict.Resource != OK || r.Metrics.FinalValue != 98 || r.Metrics.Writes != 2 {
		t.Fatalf("serial history: %+v %+v", r.Verdict, r.Metrics)
	}
	lost := []Access{
		access(1, "c1", "read", 100, 0, 0, true), access(2, "c2", "read", 100, 0, 0, true),
		access(3, "c2", "write", 99, 100, 0, true), access(4, "c1", "write", 99, 100, 0, true),
	}
	r = Check(History{Initial: 100, Accesses: lost}, Options{})
	w := r.Witness.Resource
	if r.Verdict.Resource != Violated || w.Kind != LostUpdate || w.Write.Client != "c1" || w.Overwritten.Client != "c2" || w.Final != 99 || w.Expected != 98 {
		t.Fatalf("lost update: %+v %+v", r.Verdict, w)
	}
	rejected := append(lost[:3:3], access(4, "c1", "write", 99, 100, 1, false))
	if r := Check(History{Initial: 100, Accesses: rejected}, Options{}); r.Verdict.Resource != OK || r.Metrics.RejectedWrites != 1 {
		t.Fatalf("a rejected stale write is no violation: %+v", r.Verdict)
	}

	cases := []struct {
		name   string
		log    []Access
		kind   string
		client string
		text   string
	}{
		{"duplicate token", []Access{
			access(1, "c1", "read", 100, 0, 33, true), access(2, "c1", "write", 99, 100, 33, true),
			access(3, "c2", "read", 99, 0, 33, true), access(4, "c2", "write", 98, 99, 33, true),
		}, DuplicateToken, "c2", "token 33"},
		{"first write checked against the initial value", []Access{
			access(1, "c1", "write", 89, 90, 0, true),
		}, StaleBase, "c1", "the resource held 100"},
		{"a write that skips items", []Access{
			access(1, "c1", "read", 100, 0, 0, true), access(2, "c1", "write", 97, 100, 0, true),
		}, NotReadMinus1, "c1", "wrote 97 at 0.002s after reading 100"},
		{"a write whose claimed base is not what was read", []Access{
			access(1, "c1", "read", 100, 0, 0, true), access(2, "c1", "write", 98, 99, 0, true),
		}, NotReadMinus1, "c1", "after reading 100"},
		{"stale token accepted", []Access{
			access(1, "c1", "read", 100, 0, 33, true),
			access(2, "c2", "read", 100, 0, 34, true), access(3, "c2", "write", 99, 100, 34, true),
			access(4, "c1", "write", 98, 99, 33, true),
		}, StaleToken, "c1", "token 33 after c2's read at 0.002s with token 34"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Check(History{Initial: 100, Accesses: c.log, Fenced: true}, Options{})
			w := r.Witness.Resource
			if r.Verdict.Resource != Violated || w == nil || w.Kind != c.kind || w.Write.Client != c.client || !strings.Contains(w.String(), c.text) {
				t.Fatalf("verdict %s, witness %+v (%v); want %s by %s saying %q", r.Verdict.Resource, w, w, c.kind, c.client, c.text)
			}
		})
	}
}

// Under the read-1 rule the value only falls, so an ABA (the value comes
// back to what a client read, after others wrote) needs another violation
// first — here c3 puts an item back — and shows among the later findings.
func TestResourceABA(t *testing.T) {
	aba := []Access{
		access(1, "c1", "read", 100, 0, 0, true),
		access(2, "c2", "read", 100, 0, 0, true), access(3, "c2", "write", 99, 100, 0, true),
		access(4, "c3", "read", 99, 0, 0, true), access(5, "c3", "write", 100, 99, 0, true),
		access(6, "c1", "write", 99, 100, 0, true),
	}
	r := Check(History{Initial: 100, Accesses: aba}, Options{})
	w := r.Witness.Resource
	if r.Verdict.Resource != Violated || w.Kind != NotReadMinus1 || w.Write.Client != "c3" || len(w.Later) != 1 ||
		!strings.HasPrefix(w.Later[0], "ABA: c1 wrote 99 at 0.006s based on its read of 100 at 0.001s; the value was 100 again, but c3's write at 0.005s came in between") {
		t.Fatalf("witness %+v", w)
	}
}

func TestLiveness(t *testing.T) {
	// c1 held until 1s; c2 wanted from 0 and got it only at 9s.
	h := History{
		Intervals: []Interval{iv("c1", 0, time.Second, "crash"), iv("c2", 9*time.Second, 10*time.Second, "release")},
		Wants:     []Want{{Client: "c2", From: 0, To: 9 * time.Second, Outcome: "acquired"}},
		End:       10 * time.Second,
	}
	r := Check(h, Options{LivenessBound: 5 * time.Second})
	u := r.Witness.Liveness
	if r.Verdict.Liveness != Violated || u.From != time.Second || u.To != 9*time.Second || !slices.Equal(u.Waiting, []string{"c2"}) || u.Blamed != 8*time.Second {
		t.Fatalf("liveness %s, witness %v", r.Verdict.Liveness, u)
	}
	if r := Check(h, Options{LivenessBound: 9 * time.Second}); r.Verdict.Liveness != OK {
		t.Fatal("an 8s gap violates a 9s bound")
	}
	// A partition from 2s to 7s excuses 5 of the 8 seconds.
	if r := Check(h, Options{LivenessBound: 5 * time.Second, Excused: []Window{{From: 2 * time.Second, To: 7 * time.Second, Waiters: []string{"c2"}, Why: "partition c2|A"}}}); r.Verdict.Liveness != OK {
		t.Fatalf("excused window not honoured: %v", r.Witness.Liveness)
	}
	// Excuses are listed: a 2s partition and c2's own 3.1s pause leave
	// 8 - 2 - 3.1 = 2.9s blamed, over a 2s bound.
	ex := []Window{
		{From: 2 * time.Second, To: 4 * time.Second, Waiters: []string{"c2"}, Why: "partition c2|A"},
		{From: 5 * time.Second, To: 8100 * ms, Client: "c2", Why: "paused"},
	}
	r = Check(h, Options{LivenessBound: 2 * time.Second, Excused: ex})
	u = r.Witness.Liveness
	if r.Verdict.Liveness != Violated || u.Blamed != 2900*ms {
		t.Fatalf("liveness %s, witness %v", r.Verdict.Liveness, u)
	}
	s := u.String()
	for _, want := range []string{"c2 paused 3.1s of this gap", "partition c2|A 2s (kept c2 from the lock during [2.000s, 4.000s])", "5.1s of it excused"} {
		if !strings.Contains(s, want) {
			t.Errorf("witness %q lacks %q", s, want)
		}
	}
	// A paused waiter is no live waiter, but another live waiter still is:
	// c3 waits through c2's pause, which then excuses nothing.
	h3 := h
	h3.Wants = append(slices.Clone(h.Wants), Want{Client: "c3", From: 0, To: 10 * time.Second, Outcome: "end of run"})
	r = Check(h3, Options{LivenessBound: 2 * time.Second, Excused: ex[1:]})
	if u := r.Witness.Liveness; r.Verdict.Liveness != Violated || u.Blamed != 8*time.Second || len(u.Excuses) != 0 {
		t.Fatalf("c3 waits through c2's pause: %v", u)
	}
	// A holder that keeps the lock beyond MaxHold while others wait is stuck.
	stuck := History{
		Intervals: []Interval{iv("c1", 0, 30*time.Second, "end of run")},
		Wants:     []Want{{Client: "c2", From: ms, To: 30 * time.Second, Outcome: "end of run"}},
		End:       30 * time.Second,
	}
	r = Check(stuck, Options{LivenessBound: 5 * time.Second, MaxHold: 10 * time.Second})
	if r.Verdict.Liveness != Violated || !slices.Equal(r.Witness.Liveness.Stuck, []string{"c1"}) {
		t.Fatalf("stuck holder: %s %v", r.Verdict.Liveness, r.Witness.Liveness)
	}
	if r := Check(stuck, Options{LivenessBound: 5 * time.Second}); r.Verdict.Liveness != OK {
		t.Fatal("without MaxHold a live holder keeps the lock available")
	}
}

// porcupine's page names the clients as the run does, shows times in ms,
// carries the fault annotations, and is the same byte for byte every time
// although porcupine gathers partial linearizations in map order.
func TestVisualize(t *testing.T) {
	h := History{Intervals: []Interval{
		iv("c1", 0, 10*ms, "release"), iv("c2", 5*ms, 20*ms, "release"), iv("c3", 6*ms, 9*ms, "release"),
		iv("c1", 20*ms, 30*ms, "release"), iv("c3", 25*ms, 40*ms, "release"),
	}}
	opt := Options{Excused: []Window{{From: 2 * ms, To: 7 * ms, Why: "partition c1|A"}}}
	var first []byte
	for i := 0; i < 20; i++ {
		var b bytes.Buffer
		if err := Check(h, opt).Visualize(&b); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b.Bytes()
			continue
		}
		if !bytes.Equal(first, b.Bytes()) {
			t.Fatal("two renderings of one history differ")
		}
	}
	page := string(first)
	for _, want := range []string{
		`const locklabClients = ["c1","c2","c3"]`, "? locklabClients[i] :",
		`"OriginalStart":"5.000 ms"`, `c2 holds (from 5.000 ms)`, `"Description":"partition c1|A"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Count(page, "locklabClients[i]") != 2 {
		t.Error("porcupine's row labels were not both renamed (has its script changed?)")
	}
}

// One resource rule for every backend (issue 31 item 7): tokens are part of
// the rule only on a store that compares them. A serial history whose
// leases carry tokens (a ZooKeeper node's sequence number on an unfenced
// store) is ok, as the same history without tokens (a Redis lease) is;
// on a fenced store the same accesses are a stale token.
func TestTokensJudgedOnlyOnAFencedStore(t *testing.T) {
	serial := func(fenceA, fenceB int64) []Access {
		return []Access{
			access(1, "c2", "read", 100, 0, fenceB, true), access(2, "c2", "write", 99, 100, fenceB, true),
			access(3, "c1", "read", 99, 0, fenceA, true), access(4, "c1", "write", 98, 99, fenceA, true),
		}
	}
	for _, c := range []struct {
		name   string
		log    []Access
		fenced bool
		want   Status
	}{
		{"tokenless lease, unfenced store", serial(0, 0), false, OK},
		{"lease with a token, unfenced store", serial(33, 34), false, OK},
		{"lease with a token, fenced store", serial(33, 34), true, Violated},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Check(History{Initial: 100, Accesses: c.log, Fenced: c.fenced}, Options{})
			if r.Verdict.Resource != c.want {
				t.Fatalf("resource %s (%v), want %s", r.Verdict.Resource, r.Witness.Resource, c.want)
			}
			if c.want == Violated && (r.Witness.Resource.Kind != StaleToken || r.Witness.Resource.Write.Client != "c1") {
				t.Fatalf("witness %v, want c1's stale token", r.Witness.Resource)
			}
		})
	}
	// An unfenced store's history is still judged by what the writes did
	// to the value: c1's write based on a value c2 had changed is a lost
	// update, with or without tokens.
	lost := []Access{
		access(1, "c1", "read", 100, 0, 33, true),
		access(2, "c2", "read", 100, 0, 34, true), access(3, "c2", "write", 99, 100, 34, true),
		access(4, "c1", "write", 99, 100, 33, true),
	}
	if r := Check(History{Initial: 100, Accesses: lost}, Options{}); r.Verdict.Resource != Violated || r.Witness.Resource.Kind != LostUpdate {
		t.Fatalf("unfenced lost update: %s %v", r.Verdict.Resource, r.Witness.Resource)
	}
}
