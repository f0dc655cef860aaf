package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/locklab/locklab/sim/bubblehost"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
		lease := &algorithms.Lease{Resource: p.Key, Token: tok, Start: start, Validity: start.Add(p.TTL - drift)}
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
	all, err := Catalogue()
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
	all, err := Catalogue()
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

// Which faults excuse unavailability, and for whom: a healed partition, a
// drop rule and a node's downtime for everybody while they last, a pause
// for its own client, each delayed message until it arrives; a partition
// that never heals, a node that never returns and a single lost reply
// excuse nothing.
func TestExcusedWindows(t *testing.T) {
	sec := time.Second
	applied := []faults.Applied{
		{At: 1 * sec, Until: 3 * sec, Fault: faults.Fault{Kind: faults.Partition}, Text: "partition c1|A"},
		{At: 2 * sec, Fault: faults.Fault{Kind: faults.Partition}, Text: "partition c2|A for good"},
		{At: 4 * sec, Until: 9 * sec, Fault: faults.Fault{Kind: faults.Pause, Target: "c2"}, Text: "pause c2"},
		{At: 5 * sec, Until: 6 * sec, Fault: faults.Fault{Kind: faults.NodeCrash}, Text: "node-crash A"},
		{At: 5 * sec, Fault: faults.Fault{Kind: faults.NodeCrash}, Text: "node-crash B for good"},
		{At: 7 * sec, Fault: faults.Fault{Kind: faults.Drop}, Text: "drop one reply"},
		{At: 7 * sec, Until: 8 * sec, Fault: faults.Fault{Kind: faults.Drop}, Text: "drop replies for 1s"},
		{At: 8 * sec, Fault: faults.Fault{Kind: faults.ClockJump}, Text: "clock-jump A"},
		{At: 19 * sec, Until: 30 * sec, Fault: faults.Fault{Kind: faults.Partition}, Text: "partition past the end"},
	}
	delays := []sim.Delayed{{From: 10 * sec, To: 10*sec + 200*time.Millisecond, Client: "c1", Summary: "reply A→c1 SET (fault)"}}
	got := excusedWindows(applied, delays, 20*sec)
	want := []checker.Window{
		{From: 1 * sec, To: 3 * sec, Why: "partition c1|A"},
		{From: 4 * sec, To: 9 * sec, Client: "c2", Why: "paused"},
		{From: 5 * sec, To: 6 * sec, Why: "node-crash A"},
		{From: 7 * sec, To: 8 * sec, Why: "drop replies for 1s"},
		{From: 19 * sec, To: 20 * sec, Why: "partition past the end"},
		{From: 10 * sec, To: 10*sec + 200*time.Millisecond, Why: "delayed reply A→c1 SET (fault)"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("excused windows\n%+v\nwant\n%+v", got, want)
	}
}

// The liveness witness lists each fault's share of the gap: in
// reentrant-retry-double-count, the late reply that made go-redis re-send
// the script excuses its own 200 ms at most, not the orphaned hold count.
func TestLivenessWitnessListsExcuses(t *testing.T) {
	s := mustGet(t, "reentrant-retry-double-count")
	r := mustRun(t, s, s.Seed, Options{})
	u := r.Report.Witness.Liveness
	if u == nil || len(u.Excuses) != 1 || !strings.HasPrefix(u.Excuses[0].Why, "delayed reply A→c1 EVAL") ||
		u.Excuses[0].Excused <= 0 || u.Excuses[0].Excused > 200*time.Millisecond || u.Blamed < 20*time.Second ||
		!strings.Contains(u.String(), "excused by faults (delayed reply A→c1 EVAL") {
		t.Fatalf("liveness witness %v", u)
	}
}
