package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

// holds maps each client to its (only) hold.
func holds(t *testing.T, res *Result) map[string]checker.Interval {
	t.Helper()
	out := map[string]checker.Interval{}
	for _, iv := range res.History.Intervals {
		if _, dup := out[iv.Client]; dup {
			t.Fatalf("%s holds twice", iv.Client)
		}
		out[iv.Client] = iv
	}
	return out
}

func runYAML(t *testing.T, src string) *Result {
	t.Helper()
	sc, err := scenarios.Parse("inline.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// zk-semaphore-session-expiry: c1's lease goes with its expired session
// while it is paused, c3 (waiting with the counting mutex) takes a lease:
// c1, c2 and c3 hold two leases.
func TestZKSemaphoreSessionExpiry(t *testing.T) {
	bubblehost.Bind(t)
	sc, err := scenarios.Get("zk-semaphore-session-expiry")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Report.Witness.MutualExclusion
	if o == nil || o.Permits != 2 {
		t.Fatalf("witness %v, want 3 holders of 2 leases", o)
	}
	var names []string
	for _, h := range o.Holders {
		names = append(names, h.Client)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"c1", "c2", "c3"}) {
		t.Fatalf("holders %v, want c1 c2 c3", names)
	}
	for _, m := range res.Metrics {
		if m.Name == "sessions_expired" && m.Value != 1 {
			t.Fatalf("%v sessions expired, want c1's", m.Value)
		}
	}
}

// Without faults the ZooKeeper semaphore admits two of three at once: the
// third takes a lease only when a holder returns one.
func TestZKSemaphoreCountsLeases(t *testing.T) {
	bubblehost.Bind(t)
	res := runYAML(t, `id: zk-semaphore-inline
title: three clients, two leases
algorithm: gozk-semaphore
ttl: 6s
params: {zk_servers: "1", session_timeout: 6s}
clients:
  count: 3
  cycles: 1
  permits: 2
  each:
    c1: {start: 0s, work: 1s}
    c2: {start: 50ms, work: 3s}
    c3: {start: 100ms, work: 500ms}
duration: 20s
expect: {mutual_exclusion: ok, resource: ok, liveness: ok}
`)
	if v := res.Report.Verdict.MutualExclusion; v != checker.OK {
		t.Fatalf("mutual exclusion %s: %v", v, res.Report.Witness.MutualExclusion)
	}
	h := holds(t, res)
	if len(h) != 3 || h["c1"].Start >= h["c2"].End || h["c2"].Start >= h["c1"].End {
		t.Fatalf("c1 and c2 must hold together: %v", h)
	}
	if h["c3"].Start < h["c1"].End {
		t.Fatalf("c3 leased at %v, before c1 returned its lease at %v", h["c3"].Start, h["c1"].End)
	}
}

// The ZooKeeper reader-writer lock: two readers read together; a writer
// queued behind them waits for both; a reader queued behind the writer
// waits for the writer (no writer starvation).
func TestZKReadWriteLockQueue(t *testing.T) {
	bubblehost.Bind(t)
	res := runYAML(t, `id: zk-rwlock-inline
title: two readers, a writer, a late reader
algorithm: gozk-rwlock
ttl: 6s
params: {zk_servers: "1", session_timeout: 6s}
clients:
  count: 4
  cycles: 1
  each:
    c1: {start: 0s, work: 1s, mode: read}
    c2: {start: 100ms, work: 1s, mode: read}
    c3: {start: 200ms, work: 300ms, mode: write}
    c4: {start: 300ms, work: 100ms, mode: read}
duration: 20s
expect: {mutual_exclusion: ok, resource: ok, liveness: ok}
`)
	if v := res.Report.Verdict.MutualExclusion; v != checker.OK {
		t.Fatalf("mutual exclusion %s: %v", v, res.Report.Witness.MutualExclusion)
	}
	h := holds(t, res)
	if len(h) != 4 {
		t.Fatalf("holds %v", h)
	}
	if h["c2"].Start >= h["c1"].End {
		t.Fatalf("readers c1 %v and c2 %v must overlap", h["c1"], h["c2"])
	}
	if h["c3"].Start < h["c1"].End || h["c3"].Start < h["c2"].End {
		t.Fatalf("writer c3 began at %v, before the readers ended (%v, %v)", h["c3"].Start, h["c1"].End, h["c2"].End)
	}
	if h["c4"].Start < h["c3"].End {
		t.Fatalf("reader c4 began at %v, before the writer it queued behind ended at %v", h["c4"].Start, h["c3"].End)
	}
}

// zk-rwlock-lost-create-reply: c2's first write- node, whose create reply
// was lost, is an orphan of its live session. Once c1 has written, nobody
// holds to the end of the run while the reader c3 and c2 itself wait. In
// the fixed twin c2 holds that very node (sequence 1, fence 2: it adopted
// it rather than making another) and c3 reads after it.
func TestZKRWLockLostCreateReply(t *testing.T) {
	bubblehost.Bind(t)
	r := mustRun(t, mustGet(t, "zk-rwlock-lost-create-reply"), 1, Options{})
	u := r.Report.Witness.Liveness
	if u == nil || strings.Join(u.Waiting, ",") != "c2,c3" || u.To != r.Scenario.Duration.D() {
		t.Fatalf("liveness witness %+v; want c2 and c3 waiting to the end of the run", u)
	}
	if h := holds(t, r); len(h) != 1 || h["c1"].EndReason != "release" {
		t.Fatalf("holds %v; want c1's only", h)
	}
	fixed := mustRun(t, mustGet(t, "zk-rwlock-lost-create-reply-fixed"), 1, Options{})
	h := holds(t, fixed)
	if c2 := h["c2"]; len(h) != 3 || !strings.HasSuffix(c2.LockValue, "-write-0000000001") || c2.FencingToken != 2 {
		t.Fatalf("holds %v; want c2 to hold its first node, write-0000000001", h)
	}
	if h["c3"].Start < h["c2"].End || h["c2"].Start < h["c1"].End {
		t.Fatalf("holds %v; want c1, c2, then the reader c3", h)
	}
}

// zk-semaphore-lost-lease-reply: the reply to c2's lease create is lost.
// The protected lease is found by its GUID and adopted: c2 holds that very
// node (sequence 1, the one its lost reply was about, not a second one),
// after c1 and before c3, and the one permit is never held by an orphan.
func TestZKSemaphoreLostLeaseReply(t *testing.T) {
	bubblehost.Bind(t)
	r := mustRun(t, mustGet(t, "zk-semaphore-lost-lease-reply"), 1, Options{})
	if u := r.Report.Witness.Liveness; u != nil {
		t.Fatalf("liveness witness %+v; want none (c2 adopts its lease)", u)
	}
	h := holds(t, r)
	if c2 := h["c2"]; len(h) != 3 || !strings.Contains(c2.LockValue, "_c_") || !strings.HasSuffix(c2.LockValue, "-lease-0000000001") {
		t.Fatalf("holds %v; want c2 to hold its first, protected lease node, lease-0000000001", h)
	}
	if h["c2"].Start < h["c1"].End || h["c3"].Start < h["c2"].End {
		t.Fatalf("holds %v; want c1, c2, then c3", h)
	}
}

// zk-semaphore-lost-release and zk-rwlock-lost-release: the holder c1's
// release DELETE is lost on the way. The guaranteed delete retries it
// after the reconnect, so the lease or the write- node goes and those
// queued behind it hold: c2 (and, for the reader-writer lock, c3 reading
// beside c2) after c1. Deleted once, the node stayed with c1's live
// session and they waited to the end of the run.
func TestZKLostReleaseIsRetried(t *testing.T) {
	bubblehost.Bind(t)
	sem := mustRun(t, mustGet(t, "zk-semaphore-lost-release"), 1, Options{})
	if u := sem.Report.Witness.Liveness; u != nil {
		t.Fatalf("semaphore: liveness witness %+v; want none (c1's lease deleted in the background)", u)
	}
	if h := holds(t, sem); len(h) != 2 || h["c2"].Start < h["c1"].End {
		t.Fatalf("semaphore: holds %v; want c1, then c2", h)
	}
	rw := mustRun(t, mustGet(t, "zk-rwlock-lost-release"), 1, Options{})
	if u := rw.Report.Witness.Liveness; u != nil {
		t.Fatalf("rwlock: liveness witness %+v; want none (c1's write- node deleted in the background)", u)
	}
	h := holds(t, rw)
	if len(h) != 3 || h["c2"].Start < h["c1"].End || h["c3"].Start < h["c1"].End {
		t.Fatalf("rwlock: holds %v; want the writer c1, then the readers c2 and c3", h)
	}
	if h["c3"].Start >= h["c2"].End {
		t.Fatalf("rwlock: holds %v; want the readers c2 and c3 to read together", h)
	}
}
