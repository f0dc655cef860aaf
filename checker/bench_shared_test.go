package checker

import (
	"fmt"
	"testing"
	"time"
)

// busySemaphoreHistory is n holds of a 3-permit semaphore by 10 clients
// that is never free: a hold begins every 2 ms and lasts 6 ms, so three
// are always under way (2n porcupine operations, no quiet instant).
func busySemaphoreHistory(n int) History {
	var h History
	for k := 0; k < n; k++ {
		s := time.Duration(k) * 2 * time.Millisecond
		h.Intervals = append(h.Intervals, Interval{Client: fmt.Sprintf("c%d", k%10+1), Start: s, End: s + 6*time.Millisecond, EndReason: "release"})
	}
	h.End = time.Duration(n+3) * 2 * time.Millisecond
	return h
}

// busyReadWriteHistory is n holds of a reader-writer lock that is never
// free: runs of four readers overlapping one another, each run handing over
// to one writer the instant its last reader ends, and the writer to the next
// run of readers.
func busyReadWriteHistory(n int) History {
	var h History
	at := time.Duration(0)
	for k := 0; k < n; {
		for r := 0; r < 4 && k < n; r, k = r+1, k+1 {
			h.Intervals = append(h.Intervals, Interval{Client: fmt.Sprintf("r%d", r+1), Mode: ModeRead, Start: at + time.Duration(r)*time.Millisecond, End: at + 8*time.Millisecond, EndReason: "release"})
		}
		at += 8 * time.Millisecond
		if k < n {
			h.Intervals = append(h.Intervals, Interval{Client: fmt.Sprintf("w%d", k%3+1), Mode: ModeWrite, Start: at, End: at + 3*time.Millisecond, EndReason: "release"})
			k++
			at += 3 * time.Millisecond
		}
	}
	h.End = at
	return h
}

// go test ./checker -run XXX -bench 'Semaphore|ReadWrite' -benchmem -cpu 1
func BenchmarkCheckSemaphore(b *testing.B) {
	h := busySemaphoreHistory(50_000)
	for i := 0; i < b.N; i++ {
		if r := Check(h, Options{Permits: 3}); r.Verdict.MutualExclusion != OK {
			b.Fatalf("verdict %+v %v", r.Verdict, r.Witness.MutualExclusion)
		}
	}
}

func BenchmarkCheckReadWrite(b *testing.B) {
	h := busyReadWriteHistory(50_000)
	for i := 0; i < b.N; i++ {
		if r := Check(h, Options{}); r.Verdict.MutualExclusion != OK {
			b.Fatalf("verdict %+v %v", r.Verdict, r.Witness.MutualExclusion)
		}
	}
}

// The benchmarks' histories are what they claim: never free, and one
// permit fewer (or a reader made a writer) is caught.
func TestBusyHistoriesAreBusy(t *testing.T) {
	s := busySemaphoreHistory(300)
	if r := Check(s, Options{Permits: 2}); r.Verdict.MutualExclusion != Violated || len(r.Witness.MutualExclusion.Holders) != 3 {
		t.Fatalf("two permits: %s %v", r.Verdict.MutualExclusion, r.Witness.MutualExclusion)
	}
	rw := busyReadWriteHistory(300)
	rw.Intervals[250].Mode = ModeWrite
	if r := Check(rw, Options{}); r.Verdict.MutualExclusion != Violated {
		t.Fatalf("a reader made writer: %s", r.Verdict.MutualExclusion)
	}
	if got := len(busySegments(mutexOperations(s.Intervals))); got < 4 {
		t.Fatalf("a busy semaphore's %d operations in %d partitions", 2*len(s.Intervals), got)
	}
}
