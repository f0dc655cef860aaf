package gozk

import (
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim/zk/ensemble"
	"github.com/locklab/locklab/sim/zk/wire"
)

// Scenarios of issue 13, each with its expected verdict and, where there
// is one, its fixed twin.

// TestScenarioLostDelete: every client's first DELETE is lost on the way
// (the connection breaks, the client reconnects with its session). The
// naive release returns the error and leaves its node, which blocks the
// queue for as long as the session lives: only the first holder ever
// holds. Curator's guaranteed delete retries in the background: every
// round completes. When only the reply is lost the delete happened, and
// both recipes are fine.
func TestScenarioLostDelete(t *testing.T) {
	for _, tc := range []struct {
		naive, reply bool
		want         string
		done         int
	}{
		{naive: true, want: "liveness violated", done: 1},
		{naive: false, want: "ok", done: 3},
		{naive: true, reply: true, want: "ok", done: 3},
		{naive: false, reply: true, want: "ok", done: 3},
	} {
		w := fixedQueueWorkload(ensemble.Config{}, tc.naive)
		w.rounds, w.hold, w.horizon = 1, 200*time.Millisecond, 30*time.Second
		w.plan = func(e *ensemble.Ensemble, _ *rand.Rand, _ *appControl) {
			for _, h := range []string{"c1", "c2", "c3"} {
				e.LoseNext(h, wire.OpDelete, tc.reply)
			}
		}
		o := play(t, w, 1)
		if o.verdict() != tc.want || o.done != tc.done {
			t.Errorf("naive=%v reply lost=%v: %s with %d/%d rounds; want %s with %d", tc.naive, tc.reply, o.verdict(), o.done, o.want, tc.want, tc.done)
		}
	}
}

// TestScenarioLeaderCrashDuringAcquire: the leader crashes the moment a
// waiter's protected create reaches its server. The create is lost with
// the leader; go-zookeeper's Lock gets an error (no server serves during
// the election), is called again, and every round completes: the
// protected create leaves no orphan.
func TestScenarioLeaderCrashDuringAcquire(t *testing.T) {
	w := zkLockWorkload(ensemble.Config{})
	w.rounds, w.hold, w.horizon = 2, 200*time.Millisecond, 30*time.Second
	w.plan = func(e *ensemble.Ensemble, _ *rand.Rand, _ *appControl) { e.CrashLeaderOn("c2", wire.OpCreate) }
	o := play(t, w, 1)
	if o.verdict() != "ok" || o.done != 6 || o.elections != 1 {
		t.Fatalf("%s, %d/%d rounds, %d elections, %d errors; want ok after one election", o.verdict(), o.done, o.want, o.elections, o.errors)
	}
}

// minorityRun: the holder's server (zk1) is cut off from zk2 and zk3 while
// the holder holds; the holder stops as soon as its connection drops
// (SUSPENDED). It returns the overlap of the two holds (≤ 0: none), the
// instant the waiter got the lock and the instant the holder stopped,
// both from the cut.
func minorityRun(t *testing.T, cfg ensemble.Config) (overlap, waiterAt, holderStop time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		e := ensemble.New(cfg)
		defer e.Stop()
		var mu sync.Mutex
		lost := false
		h, _, _ := e.Connect("holder", 0, 4*time.Second, func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateDisconnected {
				mu.Lock()
				lost = true
				mu.Unlock()
			}
		})
		defer h.Close()
		wc, _, _ := e.Connect("waiter", 1, 4*time.Second, nil)
		defer wc.Close()
		qh, qw := NewQueue(h, "/locks/x"), NewQueue(wc, "/locks/x")
		defer qh.Stop()
		defer qw.Stop()
		if _, err := qh.Lock(); err != nil {
			t.Fatal(err)
		}
		cut := time.Now()
		e.Partition("zk1", "zk2")
		e.Partition("zk1", "zk3")
		got := make(chan time.Duration, 1)
		go func() {
			if _, err := qw.Lock(); err == nil {
				got <- time.Since(cut)
			}
		}()
		for time.Since(cut) < 20*time.Second {
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			l := lost
			mu.Unlock()
			if l {
				break
			}
		}
		holderStop = time.Since(cut)
		qh.Unlock() // the holder stops acting and lets go
		waiterAt = <-got
		overlap = holderStop - waiterAt
	})
	return
}

// TestScenarioMinorityPartition: with ZooKeeper's defaults (tickTime 2 s,
// syncLimit 5, so 10 s before the minority server gives up; session
// timeout 4 s) the leader expires the holder's session and the waiter
// takes the lock about 4–6 s after the cut, while the holder's own server
// keeps telling it all is well until 10 s: two holders for several
// seconds, even though the holder stops on SUSPENDED. The fixed twin
// keeps syncLimit·tickTime below the session timeout (syncLimit 1): the
// holder is dropped at 2 s and stops before anyone else can hold.
func TestScenarioMinorityPartition(t *testing.T) {
	overlap, waiterAt, holderStop := minorityRun(t, ensemble.Config{})
	t.Logf("defaults: waiter holds %v after the cut, holder stops at %v: overlap %v", waiterAt, holderStop, overlap)
	if overlap < 3*time.Second || waiterAt < 4*time.Second || waiterAt > 6100*time.Millisecond || holderStop < 10*time.Second {
		t.Fatalf("defaults: waiter holds at %v, holder stops at %v (overlap %v); want the waiter in at 4–6 s and the holder unaware until 10 s", waiterAt, holderStop, overlap)
	}
	overlap, waiterAt, holderStop = minorityRun(t, ensemble.Config{SyncLimit: 1})
	if overlap > 0 || holderStop > 2100*time.Millisecond {
		t.Fatalf("syncLimit 1: waiter holds at %v, holder stops at %v; want the holder to stop first", waiterAt, holderStop)
	}
}

// curator604Run: client A's protected create succeeds but its reply is
// lost, and A is cut off from the whole ensemble. After a session timeout
// without contact A declares its session LOST on its own (as Curator
// does), replaces its ZooKeeper handle and resumes the protected create in
// a new session: the lookup finds its old node, which the ensemble has
// not yet removed (the old session's expiry waits for the next tick). B,
// queued behind that node, takes the lock when the ensemble finally
// expires the old session. It returns the overlap of A's and B's holds.
func curator604Run(t *testing.T, naive bool) (overlap time.Duration, note string) {
	synctest.Test(t, func(t *testing.T) {
		e := ensemble.New(ensemble.Config{})
		defer e.Stop()
		const guid = "604604604604604604604604604604aa"
		b, _, _ := e.Connect("b", 1, 4*time.Second, nil)
		defer b.Close()
		qb := NewQueue(b, "/locks/x")
		defer qb.Stop()
		if _, err := qb.Lock(); err != nil {
			t.Fatal(err)
		}
		a1, _, _ := e.Connect("a", 0, 4*time.Second, nil)
		a1.Exists("/")
		// A's create takes effect; its reply is lost and A is cut off.
		e.LoseNext("a", wire.OpCreate, true)
		q1 := NewQueue(a1, "/locks/x")
		q1.Naive, q1.GUID = naive, guid
		q1done := make(chan struct{})
		go func() { q1.Lock(); close(q1done) }() // fails once a1 is closed
		defer func() { <-q1done; q1.Stop() }()
		time.Sleep(20 * time.Millisecond)
		for _, s := range []string{"zk1", "zk2", "zk3"} {
			e.Partition("a", s)
		}
		// B releases and queues again, behind A's node.
		time.Sleep(500 * time.Millisecond)
		qb.Unlock()
		bHold := make(chan [2]time.Time, 1)
		go func() {
			if _, err := qb.Lock(); err == nil {
				in := time.Now()
				time.Sleep(time.Second) // B's critical section
				bHold <- [2]time.Time{in, time.Now()}
				qb.Unlock()
			}
		}()
		// A: no contact for a session timeout → LOST; new handle.
		time.Sleep(4 * time.Second)
		a1.Close()
		for _, s := range []string{"zk1", "zk2", "zk3"} {
			e.Heal("a", s)
		}
		a2, _, _ := e.Connect("a", 0, 4*time.Second, nil)
		defer a2.Close()
		q2 := NewQueue(a2, "/locks/x")
		q2.Naive, q2.GUID = naive, guid

		defer q2.Stop()
		if _, err := q2.Lock(); err != nil {
			t.Fatal(err)
		}
		aIn := time.Now()
		time.Sleep(6 * time.Second) // A's critical section
		aOut := time.Now()
		q2.Unlock()
		bh := <-bHold
		// The overlap of [aIn, aOut] and B's hold (≤ 0: none).
		from, to := aIn, aOut
		if bh[0].After(from) {
			from = bh[0]
		}
		if bh[1].Before(to) {
			to = bh[1]
		}
		overlap = to.Sub(from)
		note = e.Lost()[0]
	})
	return
}

// TestScenarioCurator604: the naive lookup adopts the old session's node
// and two clients hold at once once the ensemble expires that session;
// checking the node's ephemeral owner (the CURATOR-604 fix) deletes the
// stale node instead, and A queues behind B.
func TestScenarioCurator604(t *testing.T) {
	overlap, note := curator604Run(t, true)
	if overlap <= 0 {
		t.Fatalf("naive: overlap %v; want two holders (%s)", overlap, note)
	}
	t.Logf("naive: A and B hold together for %v (%s)", overlap, note)
	overlap, _ = curator604Run(t, false)
	if overlap > 0 {
		t.Fatalf("fixed: overlap %v; want none", overlap)
	}
}
