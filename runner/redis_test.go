package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
)

func overlapPair(t *testing.T, r *Result) []string {
	t.Helper()
	o := r.Report.Witness.MutualExclusion
	if o == nil {
		t.Fatalf("%s: no mutual-exclusion witness (verdict %+v)", r.Scenario.ID, r.Report.Verdict)
	}
	pair := []string{o.First.Client, o.Second.Client}
	slices.Sort(pair)
	return pair
}

func traceHas(r *Result, actor, prefix string) bool {
	for _, e := range r.Trace {
		if e.Actor == actor && strings.HasPrefix(strings.ToUpper(e.Text), strings.ToUpper(prefix)) {
			return true
		}
	}
	return false
}

// The documented Redlock sequence: c1 holds A, B, C; C's clock jumps; c2
// holds C, D, E; both believe they hold the lock.
func TestRedlockClockJumpSequence(t *testing.T) {
	s := mustGet(t, "redlock-clock-jump")
	r := mustRun(t, s, s.Seed, Options{KeepTrace: true})
	if p := overlapPair(t, r); !slices.Equal(p, []string{"c1", "c2"}) {
		t.Fatalf("overlap %v", p)
	}
	granted := map[string][]string{}
	for _, e := range r.Trace {
		if strings.HasPrefix(e.Text, "set lock") && strings.HasSuffix(e.Text, "+OK") {
			// node-side line: "set lock <token> ex 10 NX → +OK"; find the client by token
			for _, h := range r.Trace {
				if strings.Contains(h.Text, "holds lock (token "+strings.Fields(e.Text)[2]) {
					granted[h.Actor] = append(granted[h.Actor], e.Actor)
				}
			}
		}
	}
	slices.Sort(granted["c1"])
	slices.Sort(granted["c2"])
	if !slices.Equal(granted["c1"], []string{"A", "B", "C"}) || !slices.Equal(granted["c2"], []string{"C", "D", "E"}) {
		t.Fatalf("grants %v, want c1 on A,B,C and c2 on C,D,E", granted)
	}
	if r.Report.Witness.Resource == nil || r.Report.Witness.Resource.Kind != "lost update" {
		t.Fatalf("resource witness %+v", r.Report.Witness.Resource)
	}
	fenced := mustRun(t, mustGet(t, "redlock-clock-jump-fenced"), s.Seed, Options{})
	if fenced.Report.Verdict.Resource != checker.OK || fenced.Report.Metrics.RejectedWrites != 1 {
		t.Fatalf("fenced twin: resource %s with %d rejected writes, want ok with c1's stale write rejected", fenced.Report.Verdict.Resource, fenced.Report.Metrics.RejectedWrites)
	}
}

// The failover sequence: c1 gets OK from the master, the master dies before
// replicating, the replica is promoted, c2 gets OK from it.
func TestFailoverLostReplicationSequence(t *testing.T) {
	s := mustGet(t, "failover-lost-replication")
	r := mustRun(t, s, s.Seed, Options{KeepTrace: true})
	if p := overlapPair(t, r); !slices.Equal(p, []string{"c1", "c2"}) {
		t.Fatalf("overlap %v", p)
	}
	if !traceHas(r, "A", "replication of set lock") || !traceHas(r, "B", "failover: B promoted") || !traceHas(r, "c2", "dial B") {
		t.Fatal("trace lacks the lost replication, the promotion of B or c2 reaching B")
	}
	for _, iv := range r.History.Intervals {
		if iv.Client == "c2" && iv.Start < time.Second {
			t.Fatalf("c2 acquired at %v, before the failover at 1s", iv.Start)
		}
	}
}

func TestFencingTokens(t *testing.T) {
	r := mustRun(t, mustGet(t, "gc-pause-beyond-ttl-fenced"), 1, Options{})
	var fences []int64
	for _, iv := range r.History.Intervals {
		fences = append(fences, iv.FencingToken)
	}
	if !slices.Equal(fences, []int64{33, 34}) {
		t.Fatalf("fencing tokens %v, want Kleppmann's 33 and 34", fences)
	}
	var rejected []int64
	for _, a := range r.History.Accesses {
		if a.Kind == "write" && !a.Accepted {
			rejected = append(rejected, a.FencingToken)
		}
	}
	if !slices.Equal(rejected, []int64{33}) {
		t.Fatalf("rejected tokens %v, want the stale 33", rejected)
	}

	dup := mustRun(t, mustGet(t, "fencing-token-failover-regression"), 1, Options{})
	rw := dup.Report.Witness.Resource
	if rw == nil || rw.Kind != "duplicate token" || rw.Write.FencingToken != 33 {
		t.Fatalf("witness %+v, want two writes accepted with token 33", rw)
	}
	strict := mustRun(t, mustGet(t, "fencing-token-failover-regression-strict"), 1, Options{})
	if strict.Report.Verdict.Resource != checker.OK || strict.Report.Metrics.RejectedWrites != 1 {
		t.Fatalf("strict twin: %+v", strict.Report.Metrics)
	}
}

func TestLivenessWitnesses(t *testing.T) {
	cases := []struct {
		id      string
		waiting []string
		stuck   []string
		minGap  time.Duration
	}{
		// The orphan lives for the TTL (30s) while nobody holds the lock.
		{"client-retry-lost-reply", []string{"c1", "c2"}, nil, 25 * time.Second},
		{"redlock-lost-reply-release-all", []string{"c1", "c2"}, nil, 25 * time.Second},
		{"reentrant-retry-double-count", []string{"c2"}, nil, 25 * time.Second},
		// The hung holder keeps the lock for the rest of the run.
		{"watchdog-stuck-holder", []string{"c2", "c3"}, []string{"c1"}, 20 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			s := mustGet(t, c.id)
			r := mustRun(t, s, s.Seed, Options{})
			u := r.Report.Witness.Liveness
			if u == nil {
				t.Fatalf("no liveness witness; verdict %+v", r.Report.Verdict)
			}
			if !slices.Equal(u.Waiting, c.waiting) || !slices.Equal(u.Stuck, c.stuck) || u.To-u.From < c.minGap {
				t.Fatalf("witness %s; want waiting %v, stuck %v, at least %v", u, c.waiting, c.stuck, c.minGap)
			}
		})
	}
}

func TestRedlockTwinsDifferOnlyByTheRule(t *testing.T) {
	naive := mustRun(t, mustGet(t, "redlock-pause-inflight"), 1, Options{})
	if p := overlapPair(t, naive); !slices.Equal(p, []string{"c1", "c2"}) {
		t.Fatalf("naive overlap %v", p)
	}
	compliant := mustRun(t, mustGet(t, "redlock-pause-inflight-compliant"), 1, Options{KeepTrace: true})
	if compliant.Report.Verdict.MutualExclusion != checker.OK {
		t.Fatal("compliant Redlock still overlaps")
	}
	// c1 woke up with five OKs and still did not take the lock at once.
	for _, iv := range compliant.History.Intervals {
		if iv.Client == "c1" && iv.Start < 11*time.Second {
			t.Fatalf("compliant c1 acquired at %v, inside its pause", iv.Start)
		}
	}
	// c1's lease runs to 9.898s on its (true) clock; C, 2% fast, lets c2 in
	// before that, so the overlap begins inside c1's own validity: even a
	// client that stopped at its deadline would overlap. It lasts until c1
	// releases, shortly after.
	drift := mustRun(t, mustGet(t, "redlock-clock-drift"), 1, Options{})
	o := drift.Report.Witness.MutualExclusion
	if o == nil || o.First.Client != "c1" || o.Second.Client != "c2" || o.From < 9*time.Second || o.From >= 9898*time.Millisecond || o.To-o.From > 200*time.Millisecond {
		t.Fatalf("clock drift witness %+v: want c2 overlapping c1 from inside c1's validity (before 9.898s), briefly", o)
	}
}
