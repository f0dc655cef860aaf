package checker

import (
	"slices"
	"strings"
	"testing"
	"time"
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
		{"nested", []Interval{iv("c1", 0, 100*ms, "validity"), iv("c2", 20*ms, 30*ms, "release")}, Violated, []string{"c1", "c2"}},
		{"empty interval does not count", []Interval{iv("c1", 0, 10*ms, "release"), iv("c2", 5*ms, 5*ms, "validity")}, OK, nil},
		{"same client twice", []Interval{iv("c1", 0, 10*ms, "release"), iv("c1", 10*ms, 20*ms, "release")}, OK, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Check(History{Intervals: c.ivs}, Options{})
			if r.Verdict.MutualExclusion != c.want {
				t.Fatalf("verdict %s (porcupine %s), want %s", r.Verdict.MutualExclusion, r.Porcupine, c.want)
			}
			// porcupine and the direct scan must agree.
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

func access(seq int, client, kind string, value, based, fence int64, ok bool) Access {
	return Access{Seq: seq, At: time.Duration(seq) * ms, Client: client, Kind: kind, Value: value, Based: based, Fence: fence, Accepted: ok}
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
	if r.Verdict.Resource != Violated || w.Kind != "lost update" || w.Write.Client != "c1" || w.Overwritten.Client != "c2" || w.Final != 99 || w.Expected != 98 {
		t.Fatalf("lost update: %+v %+v", r.Verdict, w)
	}
	rejected := append(lost[:3:3], access(4, "c1", "write", 99, 100, 1, false))
	if r := Check(History{Initial: 100, Accesses: rejected}, Options{}); r.Verdict.Resource != OK || r.Metrics.RejectedWrites != 1 {
		t.Fatalf("a rejected stale write is no violation: %+v", r.Verdict)
	}
	dup := []Access{
		access(1, "c1", "read", 100, 0, 33, true), access(2, "c1", "write", 99, 100, 33, true),
		access(3, "c2", "read", 99, 0, 33, true), access(4, "c2", "write", 98, 99, 33, true),
	}
	r = Check(History{Initial: 100, Accesses: dup}, Options{})
	if r.Verdict.Resource != Violated || r.Witness.Resource.Kind != "duplicate token" || !strings.Contains(r.Witness.Resource.String(), "token 33") {
		t.Fatalf("duplicate token: %+v %v", r.Verdict, r.Witness.Resource)
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
	if r.Verdict.Liveness != Violated || u.From != time.Second || u.To != 9*time.Second || !slices.Equal(u.Waiting, []string{"c2"}) {
		t.Fatalf("liveness %s, witness %v", r.Verdict.Liveness, u)
	}
	if r := Check(h, Options{LivenessBound: 9 * time.Second}); r.Verdict.Liveness != OK {
		t.Fatal("an 8s gap violates a 9s bound")
	}
	// A partition from 2s to 7s excuses 5 of the 8 seconds.
	if r := Check(h, Options{LivenessBound: 5 * time.Second, Excused: []Window{{2 * time.Second, 7 * time.Second}}}); r.Verdict.Liveness != OK {
		t.Fatalf("excused window not honoured: %v", r.Witness.Liveness)
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

func TestBlame(t *testing.T) {
	ex := []Window{{1, 3}, {2, 5}, {8, 9}, {20, 30}}
	if got := blame(0, 10, ex); got != 10-4-1 {
		t.Fatalf("blame %v, want 5", got)
	}
}
