package checker

import (
	"fmt"
	"testing"
	"time"
)

// benchHistory is a fault-free run's history of n holds by 10 clients, one
// after the other on a single key, each with its want, its read and its
// write: 2n porcupine operations.
func benchHistory(n int) History {
	h := History{Initial: int64(n)}
	for k := 0; k < n; k++ {
		c := fmt.Sprintf("c%d", k%10+1)
		s := time.Duration(k) * 5 * time.Millisecond
		h.Wants = append(h.Wants, Want{Client: c, From: s - 3*time.Millisecond, To: s, Outcome: "acquired"})
		h.Intervals = append(h.Intervals, Interval{Client: c, AcquireCall: s - 3*time.Millisecond, Start: s, End: s + 4*time.Millisecond, EndReason: "release"})
		v := int64(n - k)
		h.Accesses = append(h.Accesses,
			Access{Seq: 2*k + 1, At: s + time.Millisecond, Client: c, Kind: "read", Value: v, Accepted: true},
			Access{Seq: 2*k + 2, At: s + 3*time.Millisecond, Client: c, Kind: "write", Value: v - 1, Based: v, Accepted: true})
	}
	h.End = time.Duration(n) * 5 * time.Millisecond
	return h
}

// go test ./checker -run XXX -bench Check -benchmem -cpu 1
func BenchmarkCheck(b *testing.B) {
	for _, holds := range []int{5_000, 50_000} {
		h := benchHistory(holds)
		b.Run(fmt.Sprintf("ops=%d", 2*holds), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r := Check(h, Options{LivenessBound: time.Second})
				if r.Verdict.MutualExclusion != OK || r.Verdict.Resource != OK || r.Verdict.Liveness != OK {
					b.Fatalf("verdict %+v", r.Verdict)
				}
			}
		})
	}
}

// pauseHistory is one client waiting, with nobody holding, through n short pauses of its own,
// with a fault window beside each: the shape that made the old sweep
// quadratic (issue 20, item 8: 10k windows 3.5 s, 40k 65 s).
func pauseHistory(n int) (History, []Window) {
	step := 10 * time.Millisecond
	end := time.Duration(n) * step
	h := History{
		Wants: []Want{{Client: "c2", From: 0, To: end, Outcome: "end of run"}},
		End:   end,
	}
	windows := make([]Window, 0, 2*n)
	for k := 0; k < n; k++ {
		s := time.Duration(k) * step
		windows = append(windows,
			Window{From: s, To: s + 4*time.Millisecond, Client: "c2", Why: "paused"},
			Window{From: s + 5*time.Millisecond, To: s + 6*time.Millisecond, Waiters: []string{"c2"}, Why: "delayed reply"})
	}
	return h, windows
}

// go test ./checker -run XXX -bench Liveness -benchmem -cpu 1
func BenchmarkLivenessSweep(b *testing.B) {
	for _, n := range []int{10_000, 40_000} {
		h, windows := pauseHistory(n)
		b.Run(fmt.Sprintf("windows=%d", 2*n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				u := longestUnavailable(h, 0, windows)
				if u == nil || len(u.Excuses) != 2*n {
					b.Fatalf("witness %v", u)
				}
			}
		})
	}
}
