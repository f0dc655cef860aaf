package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim"
)

// skipValidityRedlock is Redlock with one realistic mistake: it counts the
// quorum but never tests `validity > 0`, so a client whose acquisition took
// longer than the TTL (a pause while replies were in flight) believes it
// holds a lock whose keys have already expired. Everything else is the
// protocol: parallel SET NX PX on every node, lease until start + ttl -
// drift, release on every node.
type skipValidityRedlock struct{ r *algorithms.Redlock }

func (b skipValidityRedlock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	p := b.r.Params
	for attempt := 0; p.Wait.Attempts == 0 || attempt < p.Wait.Attempts; attempt++ {
		if attempt > 0 {
			env.Sleep(p.Wait.Delay)
		}
		tok := fmt.Sprintf("%016x", env.Rand().Uint64())
		start := env.Now()
		granted := make([]bool, len(b.r.Clients))
		fns := make([]func(algorithms.Env), len(b.r.Clients))
		for i, c := range b.r.Clients {
			fns[i] = func(e algorithms.Env) {
				granted[i] = c.SetArgs(e.Context(), p.Key, tok, redis.SetArgs{Mode: "NX", TTL: p.TTL}).Err() == nil
			}
		}
		env.Parallel(fns...)
		n := 0
		for _, ok := range granted {
			if ok {
				n++
			}
		}
		drift := p.TTL/100 + 2*time.Millisecond
		lease := &algorithms.Lease{Resource: p.Key, LockValue: tok, Start: start, Validity: start.Add(p.TTL - drift)}
		if n >= b.r.Quorum() { // the mistake: no `validity > 0`
			return lease, nil
		}
		b.r.Release(env, lease)
	}
	return nil, algorithms.ErrNotAcquired
}

func (b skipValidityRedlock) Release(env algorithms.Env, l *algorithms.Lease) error {
	return b.r.Release(env, l)
}

// A Redlock that skips its validity test used to pass the whole catalogue,
// because holds were cut at the lease's deadline although the client never
// looked at it. Judged on what the client does, it now fails: in
// redlock-pause-inflight-compliant it wakes from its pause, gets its quorum
// of stale OKs and acts as holder beside c2.
func TestRedlockWithoutValidityFailsCatalogue(t *testing.T) {
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	broken := func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
		return skipValidityRedlock{&algorithms.Redlock{Clients: c.Redis, Params: p, DriftPPM: 10_000}}, nil
	}
	var failed []string
	for _, s := range all {
		if s.Algorithm != "redlock" {
			continue
		}
		r := mustRun(t, s, s.Seed, Options{Factory: broken})
		if !r.Matches() {
			failed = append(failed, s.ID)
		}
		if s.ID == "redlock-pause-inflight-compliant" {
			o := r.Report.Witness.MutualExclusion
			if r.Report.Verdict.MutualExclusion != "violated" || o == nil || o.First.Client == o.Second.Client {
				t.Errorf("%s with the broken Redlock: verdict %+v, witness %v", s.ID, r.Report.Verdict, o)
			}
		}
	}
	if len(failed) == 0 {
		t.Fatal("a Redlock without `validity > 0` passes every Redlock scenario of the catalogue")
	}
	t.Logf("the broken Redlock fails %v", failed)
	// The real one passes the same scenario.
	s := mustGet(t, "redlock-pause-inflight-compliant")
	if r := mustRun(t, s, s.Seed, Options{}); !r.Matches() {
		t.Fatalf("the spec Redlock fails %s: %+v", s.ID, r.Report.Verdict)
	}
}

// On every catalogue scenario, porcupine and the exact sweep agree: the
// sweep finds a witness exactly when porcupine finds the hold instants
// illegal, and the verdict is never unknown.
func TestCheckerAgreesOnCatalogue(t *testing.T) {
	bubblehost.Bind(t) // the catalogue has real-client scenarios
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		for _, seed := range []uint64{s.Seed, 3} {
			r := mustRun(t, s, seed, Options{NoTrace: true})
			rep := r.Report
			illegal := rep.Porcupine == "Illegal"
			if illegal != (rep.Witness.MutualExclusion != nil) || rep.Verdict.MutualExclusion == checker.Unknown ||
				illegal != (rep.Verdict.MutualExclusion == checker.Violated) {
				t.Errorf("%s seed %d: porcupine %s, sweep %v, verdict %s", s.ID, seed, rep.Porcupine, rep.Witness.MutualExclusion, rep.Verdict.MutualExclusion)
			}
		}
	}
}

// runJSON is everything a run reports, as JSON.
func runJSON(t *testing.T, id string, seed uint64) []byte {
	t.Helper()
	r := mustRun(t, mustGet(t, id), seed, Options{KeepTrace: true})
	b, err := json.Marshal(struct {
		Result *Result
		Report *checker.Report
	}{r, r.Report})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A run's JSON is the same byte for byte on an idle machine and on one
// whose cores are all busy, at any GOMAXPROCS: no verdict may depend on
// machine speed or load (issue 10). The CPU burners are ordinary
// goroutines spinning outside the simulation.
func TestJSONIdenticalUnderLoad(t *testing.T) {
	bubblehost.Bind(t)
	ids := []string{"del-wrong-client", "gc-pause-beyond-ttl", "redlock-clock-drift", "zk-suspended-vs-lost", "reentrant-retry-double-count"}
	idle := map[string][]byte{}
	for _, id := range ids {
		idle[id] = runJSON(t, id, 7)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 2*runtime.NumCPU()+2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(i)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for k := 0; k < 1_000_000; k++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
				runtime.Gosched()
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		for _, id := range ids {
			if got := runJSON(t, id, 7); !bytes.Equal(got, idle[id]) {
				t.Errorf("%s at GOMAXPROCS=%d under load: the JSON differs from the idle run's", id, procs)
			}
		}
	}
}

// Which faults excuse unavailability, and for whom (issue 20, item 4):
// a healed partition excuses the clients it cuts off from the lock, a
// drop rule those whose messages to the lock it can still drop, a node's
// downtime everybody if the lock needs that node, a pause its own client,
// each delayed message between a client and the lock its client until it
// arrives; a partition that never heals, a node that never returns, a
// single lost reply, a partition between parties unrelated to the lock, a
// rule about another node and a spent count excuse nothing.
func TestExcusedWindows(t *testing.T) {
	sec := time.Second
	part := func(a, b []string) faults.Fault {
		return faults.Fault{Kind: faults.Partition, Groups: [][]string{a, b}}
	}
	applied := []faults.Applied{
		{At: 1 * sec, Until: 3 * sec, Fault: part([]string{"c1"}, []string{"A"}), Text: "partition c1|A"},
		{At: 1 * sec, Until: 3 * sec, Fault: part([]string{"c3"}, []string{"store"}), Text: "partition c3|store"},
		{At: 2 * sec, Fault: part([]string{"c2"}, []string{"A"}), Text: "partition c2|A for good"},
		{At: 4 * sec, Until: 9 * sec, Fault: faults.Fault{Kind: faults.Pause, Target: "c2"}, Text: "pause c2"},
		{At: 5 * sec, Until: 6 * sec, Fault: faults.Fault{Kind: faults.NodeCrash, Target: "A"}, Text: "node-crash A"},
		{At: 5 * sec, Until: 6 * sec, Fault: faults.Fault{Kind: faults.NodeCrash, Target: "R"}, Text: "node-crash R (a replica)"},
		{At: 5 * sec, Fault: faults.Fault{Kind: faults.NodeCrash, Target: "B"}, Text: "node-crash B for good"},
		{At: 7 * sec, Fault: faults.Fault{Kind: faults.Drop}, Text: "drop one reply"},
		{At: 7 * sec, Until: 8 * sec, Fault: faults.Fault{Kind: faults.Drop}, Text: "drop replies for 1s"},
		{At: 7 * sec, Until: 8 * sec, Fault: faults.Fault{Kind: faults.Drop, Client: "c3"}, Text: "drop c3's replies for 1s"},
		{At: 7 * sec, Until: 8 * sec, Fault: faults.Fault{Kind: faults.Drop, Node: "store"}, Text: "drop the store's replies for 1s"},
		{At: 7 * sec, Until: 30 * sec, Spent: 7500 * time.Millisecond, Fault: faults.Fault{Kind: faults.Drop, Count: 1}, Text: "drop one reply within 23s"},
		{At: 8 * sec, Fault: faults.Fault{Kind: faults.ClockJump}, Text: "clock-jump A"},
		{At: 19 * sec, Until: 30 * sec, Fault: part([]string{"A"}, []string{"c1", "c2"}), Text: "partition past the end"},
	}
	delays := []sim.Delayed{
		{From: 10 * sec, To: 10*sec + 200*time.Millisecond, Client: "c1", Ends: [2]string{"A", "c1"}, Summary: "reply A→c1 SET (fault)"},
		{From: 10 * sec, To: 10*sec + 200*time.Millisecond, Client: "c2", Ends: [2]string{"store", "c2"}, Summary: "reply store→c2 WRITE (fault)"},
	}
	reach := lockReach{Clients: []string{"c1", "c2", "c3"}, Hosts: []string{"A"}, Quorum: 1}
	got := excusedWindows(applied, delays, 20*sec, reach)
	all := []string{"c1", "c2", "c3"}
	want := []checker.Window{
		{From: 1 * sec, To: 3 * sec, Waiters: []string{"c1"}, Why: "partition c1|A"},
		{From: 4 * sec, To: 9 * sec, Client: "c2", Why: "paused"},
		{From: 5 * sec, To: 6 * sec, Waiters: all, Why: "node-crash A"},
		{From: 7 * sec, To: 8 * sec, Waiters: all, Why: "drop replies for 1s"},
		{From: 7 * sec, To: 8 * sec, Waiters: []string{"c3"}, Why: "drop c3's replies for 1s"},
		{From: 7 * sec, To: 7500 * time.Millisecond, Waiters: all, Why: "drop one reply within 23s"},
		{From: 19 * sec, To: 20 * sec, Waiters: []string{"c1", "c2"}, Why: "partition past the end"},
		{From: 10 * sec, To: 10*sec + 200*time.Millisecond, Waiters: []string{"c1"}, Why: "delayed reply A→c1 SET (fault)"},
	}
	if !slices.EqualFunc(got, want, func(a, b checker.Window) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("excused windows\n%+v\nwant\n%+v", got, want)
	}
	// Redlock over five nodes: one node down, or one node cut off, leaves
	// a quorum; three cut off do not.
	five := lockReach{Clients: []string{"c1", "c2"}, Hosts: []string{"A", "B", "C", "D", "E"}, Quorum: 3}
	got = excusedWindows([]faults.Applied{
		{At: 1 * sec, Until: 2 * sec, Fault: faults.Fault{Kind: faults.NodeCrash, Target: "C"}, Text: "node-crash C"},
		{At: 1 * sec, Until: 2 * sec, Fault: part([]string{"c1"}, []string{"C"}), Text: "partition c1|C"},
		{At: 1 * sec, Until: 2 * sec, Fault: part([]string{"A", "B", "C"}, []string{"c2", "D"}), Text: "partition ABC|c2 D"},
	}, nil, 20*sec, five)
	want = []checker.Window{{From: 1 * sec, To: 2 * sec, Waiters: []string{"c2"}, Why: "partition ABC|c2 D"}}
	if !slices.EqualFunc(got, want, func(a, b checker.Window) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("Redlock's excused windows\n%+v\nwant\n%+v", got, want)
	}
	// A master with min-replicas-to-write 1 parted from its only replica
	// refuses writes: the partition keeps from the lock the client on the
	// master's side too (sentinel-split-brain-min-replicas).
	guarded := lockReach{Clients: []string{"c1", "c2"}, Hosts: []string{"A"}, Quorum: 1,
		Guards: map[string]replicaGuard{"A": {Replicas: []string{"B"}, Need: 1}}}
	split := []faults.Applied{{At: 1 * sec, Until: 2 * sec, Fault: part([]string{"A", "c1"}, []string{"B", "c2"}), Text: "partition A,c1|B,c2"}}
	if got := excusedWindows(split, nil, 20*sec, guarded); len(got) != 1 || !slices.Equal(got[0].Waiters, []string{"c1", "c2"}) {
		t.Fatalf("guarded master's split: %+v", got)
	}
	guarded.Guards = nil
	if got := excusedWindows(split, nil, 20*sec, guarded); len(got) != 1 || !slices.Equal(got[0].Waiters, []string{"c2"}) {
		t.Fatalf("unguarded master's split: %+v", got)
	}
}

// An excuse covers only the waiters it keeps from the lock (issue 20, item
// 4). In reentrant-retry-double-count the late reply that made go-redis
// re-send the script travelled to c1, which was not waiting: it excuses
// none of c2's wait. In setnx-expire-crash-unrelated-partition a 28 s
// partition between c3 and the inventory service keeps nobody from A: the
// verdict stays violated with the whole stretch blamed (before the fix it
// excused 28 of the 30 s and read ok).
func TestLivenessWitnessListsExcuses(t *testing.T) {
	s := mustGet(t, "reentrant-retry-double-count")
	r := mustRun(t, s, s.Seed, Options{})
	u := r.Report.Witness.Liveness
	if u == nil || !slices.Equal(u.Waiting, []string{"c2"}) || len(u.Excuses) != 0 || u.Blamed != u.To-u.From {
		t.Fatalf("liveness witness %v", u)
	}
	s = mustGet(t, "setnx-expire-crash-unrelated-partition")
	r = mustRun(t, s, s.Seed, Options{})
	u = r.Report.Witness.Liveness
	if r.Report.Verdict.Liveness != checker.Violated || u == nil || len(u.Excuses) != 0 || u.Blamed != u.To-u.From || u.Blamed < 29*time.Second {
		t.Fatalf("unrelated partition: %s, witness %v", r.Report.Verdict.Liveness, u)
	}
}
