package scenarios

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/algorithms"
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
