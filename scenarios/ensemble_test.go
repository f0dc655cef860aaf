package scenarios

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim/bubblehost"
)

// ensembleBase is a valid scenario on the simulated ensemble; the tests
// below edit it.
const ensembleBase = `id: zk-base
algorithm: gozk-lock
ttl: 6s
params:
  zk_servers: "3"
  session_timeout: 4s
clients: {count: 2, cycles: 1}
duration: 20s
faults:
  - kind: node-crash
    target: zk3
    at: 1s
expect: {mutual_exclusion: ok}
`

func TestEnsembleScenarioValidates(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(ensembleBase))
	if err != nil {
		t.Fatal(err)
	}
	n := sc.Names()
	if strings.Join(n.Servers, ",") != "zk1,zk2,zk3" {
		t.Fatalf("servers %v, want zk1,zk2,zk3", n.Servers)
	}
	five, err := Parse("x.yaml", []byte(strings.Replace(ensembleBase, `zk_servers: "3"`, `zk_servers: "5"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(five.Names().Servers, ","); got != "zk1,zk2,zk3,zk4,zk5" {
		t.Fatalf("five servers: %v", got)
	}
}

// Node crashes name ZooKeeper servers; params are checked with the field
// and a did-you-mean, and persistence is refused for ZooKeeper.
func TestEnsembleScenarioErrors(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"unknown server", "target: zk3", "target: zk4",
			`x.yaml:11:13: faults[0].target: unknown node "zk4"; expected one of zk1, zk2, zk3 (did you mean zk1?)`},
		{"persistence on a zk server", "at: 1s", "at: 1s\n    restart_after: 2s\n    persistence: always",
			`x.yaml:14:18: faults[0].persistence: zk3 is a ZooKeeper server, which logs every write to disk before acknowledging it; persistence applies to Redis nodes only: remove it`},
		{"zk_servers not odd", `zk_servers: "3"`, `zk_servers: "4"`,
			`x.yaml:5:15: params.zk_servers: expected 1, 3 or 5, found "4"`},
		{"zk_servers typo", `zk_servers: "3"`, `zk_server: "3"`,
			`params.zk_server: gozk-lock does not read "zk_server"; expected one of fence_start, stop_on_disconnect, zk_servers, session_timeout, election_time, tick_time, sync_limit, apply_lag (did you mean zk_servers?)`},
		{"bad session timeout", "session_timeout: 4s", "session_timeout: soon",
			`x.yaml:6:20: params.session_timeout: expected a duration between 1ns and 1h, such as 6s, found "soon"`},
		{"apply lag on a server beyond zk_servers", "session_timeout: 4s", "session_timeout: 4s\n  apply_lag: zk2=1s, zk4=1s",
			`x.yaml:7:14: params.apply_lag: unknown server "zk4"; expected one of zk1…zk3 (params.zk_servers is 3)`},
		{"apply lag without a duration", "session_timeout: 4s", "session_timeout: 4s\n  apply_lag: zk2",
			`x.yaml:7:14: params.apply_lag: expected server=duration pairs, comma-separated, such as zk2=1500ms, found "zk2"`},
		{"stop_on_disconnect not a bool", "session_timeout: 4s", "session_timeout: 4s\n  stop_on_disconnect: sometimes",
			`params.stop_on_disconnect: expected true or false`},
		{"unknown metric", "expect: {mutual_exclusion: ok}", "expect: {mutual_exclusion: ok}\nat_most: {watch_notification: 5}",
			`at_most.watch_notification: unknown metric "watch_notification"; expected one of watch_notifications, sessions_expired, elections, zk_client_messages (did you mean watch_notifications?)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(ensembleBase, c.from) {
				t.Fatalf("edit %q not in the base", c.from)
			}
			_, err := Parse("x.yaml", []byte(strings.Replace(ensembleBase, c.from, c.to, 1)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
		})
	}
}

// A scenario with a Redis node still refuses a server name for it, and a
// ZooKeeper server name is no Redis node.
func TestNodeCrashOnRedisKeepsPersistence(t *testing.T) {
	_, err := Parse("x.yaml", []byte(strings.Replace(base, "kind: pause\n    target: c1\n    at: 1s\n    duration: 2s",
		"kind: node-crash\n    target: zk2\n    at: 1s", 1)))
	if err == nil || !strings.Contains(err.Error(), `faults[0].target: unknown node "zk2"; expected one of A, B`) {
		t.Fatalf("error %v", err)
	}
}

// Without a host for the bubble, a run of a real-client algorithm says
// how to get one.
func TestEnsembleRunNeedsABubbleHost(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(ensembleBase))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(sc, 1, Options{})
	want := "scenario zk-base: algorithm gozk-lock runs real client code (zookeeper-ensemble backend) that needs a testing/synctest bubble, and nothing hosts one here: the locklab command does it by itself; a Go test must call bubblehost.Bind(t)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v", err)
	}
}

// ensembleRun runs a catalogue scenario of the ensemble in a bubble the
// test hosts.
func ensembleRun(t *testing.T, id string, seed uint64) *Result {
	t.Helper()
	bubblehost.Bind(t)
	return mustRun(t, mustGet(t, id), seed, Options{KeepTrace: true})
}

func holdsOf(r *Result, client string) []checker.Interval {
	var out []checker.Interval
	for _, iv := range r.History.Intervals {
		if iv.Client == client {
			out = append(out, iv)
		}
	}
	return out
}

func ensembleTraceHas(r *Result, actor, text string) bool {
	for _, e := range r.Trace {
		if e.Actor == actor && strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}

func TestEnsembleScenariosInTheCatalogue(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range all {
		if !strings.HasPrefix(s.ID, "zk-ensemble-") {
			continue
		}
		got = append(got, s.ID)
		if s.Narrative.What == "" || s.Narrative.Why == "" || s.Narrative.Fix == "" || len(s.Narrative.Sources) == 0 {
			t.Errorf("%s: narrative incomplete", s.ID)
		}
		if s.Expect == (Expect{}) {
			t.Errorf("%s: no expectation", s.ID)
		}
		if info, err := algorithms.Lookup(s.Algorithm); err != nil || info.Backend != "zookeeper-ensemble" || !info.Bubble {
			t.Errorf("%s: algorithm %s is not a real-client ZooKeeper algorithm", s.ID, s.Algorithm)
		}
		if s.Twin == "" {
			// The stop-on-disconnect variant is broken too; its fix is
			// zk-ensemble-minority-partition-fixed, which names the
			// first broken run as its twin (a lesson page shows a
			// scenario with its twins, and the course has no room for a
			// third run on that page).
			if s.ID != "zk-ensemble-leader-crash" && s.ID != "zk-ensemble-minority-partition-stop" && s.ID != "zk-ensemble-minority-partition-fenced" {
				t.Errorf("%s: no twin", s.ID)
			}
		}
	}
	want := "zk-ensemble-curator-604 zk-ensemble-curator-604-fixed zk-ensemble-herd zk-ensemble-leader-crash zk-ensemble-lost-delete zk-ensemble-lost-delete-fixed zk-ensemble-minority-partition zk-ensemble-minority-partition-fenced zk-ensemble-minority-partition-fixed zk-ensemble-minority-partition-stop zk-ensemble-queue-no-herd"
	if strings.Join(got, " ") != want {
		t.Fatalf("ensemble scenarios %v\nwant %s", got, want)
	}
}

// The leader crashes as c2's first create reaches its server: one
// election, every cycle of every client completes, one after another, for
// go-zookeeper's Lock and for the recipes compared beside it.
func TestEnsembleLeaderCrash(t *testing.T) {
	bubblehost.Bind(t)
	sc := mustGet(t, "zk-ensemble-leader-crash")
	r, cmp, err := RunCompared(sc, sc.Seed, Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Matches() {
		t.Fatalf("verdict %+v", r.Report.Verdict)
	}
	if v, _ := r.Metric("elections"); v != 1 {
		t.Fatalf("%d elections, want 1", v)
	}
	if len(r.Applied) < 1 || r.Applied[0].Fault.Target != "zk3" || !ensembleTraceHas(r, "zk3", "crash") || !ensembleTraceHas(r, "zk2", "elected leader") {
		t.Fatalf("applied %+v; want zk3 crashed and zk2 elected", r.Applied)
	}
	if n := len(r.History.Intervals); n != 6 {
		t.Fatalf("%d holds, want 3 clients × 2 cycles", n)
	}
	if first := r.History.Intervals[0].Start; first < 400*time.Millisecond {
		t.Fatalf("first hold at %v, before the election could end", first)
	}
	for _, c := range cmp {
		if c.Verdict != (checker.Verdict{MutualExclusion: checker.OK, Resource: checker.OK, Liveness: checker.OK}) || len(c.Result.History.Intervals) != 6 {
			t.Errorf("%s: %+v with %d holds", c.Algorithm, c.Verdict, len(c.Result.History.Intervals))
		}
	}
}

// c1's server is cut off from the quorum: the leader expires c1's session
// at 6 s (4 s, rounded up to a 2 s tick) and c2 holds; zk1 drops c1 only
// at 11 s (syncLimit 5 × tickTime 2 s). Ignoring connection events, c1
// holds to its release at 15 s; stopping on disconnect, it stops at 11 s —
// still late; with syncLimit 1 it stops at 3 s, before c2 holds.
func TestEnsembleMinorityPartition(t *testing.T) {
	for _, c := range []struct {
		id         string
		c1End      time.Duration
		c1Reason   string
		overlap    bool
		resourceOK bool
	}{
		{"zk-ensemble-minority-partition", 15 * time.Second, "release", true, false},
		{"zk-ensemble-minority-partition-stop", 11 * time.Second, "lost", true, true},
		{"zk-ensemble-minority-partition-fixed", 3 * time.Second, "lost", false, true},
	} {
		t.Run(c.id, func(t *testing.T) {
			r := ensembleRun(t, c.id, 1)
			if !r.Matches() {
				t.Fatalf("verdict %+v, expected %+v", r.Report.Verdict, r.Scenario.Expect)
			}
			c1, c2 := holdsOf(r, "c1"), holdsOf(r, "c2")
			if len(c1) != 1 || len(c2) != 1 {
				t.Fatalf("holds c1 %v c2 %v", c1, c2)
			}
			if d := c1[0].End - c.c1End; d < 0 || d > 50*time.Millisecond || c1[0].EndReason != c.c1Reason {
				t.Fatalf("c1 holds until %v (%s); want %v (%s)", c1[0].End, c1[0].EndReason, c.c1End, c.c1Reason)
			}
			if d := c2[0].Start - 6*time.Second; d < 0 || d > 50*time.Millisecond {
				t.Fatalf("c2 holds from %v; want just after the expiry at 6s", c2[0].Start)
			}
			if v, _ := r.Metric("sessions_expired"); v != 1 {
				t.Fatalf("%d sessions expired, want c1's", v)
			}
			o := r.Report.Witness.MutualExclusion
			if c.overlap != (o != nil) {
				t.Fatalf("witness %v; overlap expected: %v", o, c.overlap)
			}
			if o != nil && (o.First.Client != "c1" || o.Second.Client != "c2" || o.From != c2[0].Start) {
				t.Fatalf("witness %v; want c1's hold overlapping c2's from %v", o, c2[0].Start)
			}
			if got := r.Report.Verdict.Resource == checker.OK; got != c.resourceOK {
				t.Fatalf("resource %s", r.Report.Verdict.Resource)
			}
		})
	}
}

// With the znode sequence as a fencing token, c1's late write (token 1)
// is refused after c2's (token 2): two holders, a consistent resource.
func TestEnsembleMinorityPartitionFenced(t *testing.T) {
	r := ensembleRun(t, "zk-ensemble-minority-partition-fenced", 1)
	if !r.Matches() || r.Report.Witness.MutualExclusion == nil {
		t.Fatalf("verdict %+v", r.Report.Verdict)
	}
	var refused []string
	for _, a := range r.History.Accesses {
		if !a.Accepted {
			refused = append(refused, fmt.Sprintf("%s %s token %d: %s", a.Client, a.Kind, a.Fence, a.Reason))
		}
	}
	if got := strings.Join(refused, "; "); got != "c1 write token 1: token 1 is lower than 2" {
		t.Fatalf("refused: %q", got)
	}
}

// c1's create happens, c1 is cut off before the reply, its session expires
// and the ensemble deletes the node; c1's next session lands on zk2, which
// applies commits 1.5 s late. Neither recipe finds the old node: c1 holds
// once, with a new node (sequence 2, fence 3), after c3.
func TestEnsembleCurator604(t *testing.T) {
	for _, id := range []string{"zk-ensemble-curator-604", "zk-ensemble-curator-604-fixed"} {
		r := ensembleRun(t, id, 1)
		if !r.Matches() || r.Report.Witness.MutualExclusion != nil {
			t.Fatalf("%s: verdict %+v, witness %v", id, r.Report.Verdict, r.Report.Witness.MutualExclusion)
		}
		c1, c3 := holdsOf(r, "c1"), holdsOf(r, "c3")
		if len(c1) != 1 || len(c3) != 1 || c1[0].Fence != 3 || !strings.HasSuffix(c1[0].Token, "-lock-0000000002") || c1[0].Start < c3[0].End {
			t.Fatalf("%s: c1 %+v c3 %+v; want c1 after c3 on a new node", id, c1, c3)
		}
		if v, _ := r.Metric("sessions_expired"); v != 1 {
			t.Fatalf("%s: %d sessions expired, want c1's first", id, v)
		}
		if !ensembleTraceHas(r, "c1", "CONNECT refused (session expired)") || !ensembleTraceHas(r, "zk2", "created for c1#") {
			t.Fatalf("%s: the trace does not show c1's session expiring and a new one on zk2", id)
		}
	}
}

// c1's DELETE is lost: without guaranteed delete its node blocks c2 and
// c3 until the end of the run; with it, everyone holds in turn.
func TestEnsembleLostDelete(t *testing.T) {
	r := ensembleRun(t, "zk-ensemble-lost-delete", 1)
	if !r.Matches() || len(r.History.Intervals) != 1 || r.History.Intervals[0].Client != "c1" {
		t.Fatalf("naive: verdict %+v, holds %+v", r.Report.Verdict, r.History.Intervals)
	}
	u := r.Report.Witness.Liveness
	if u == nil || strings.Join(u.Waiting, ",") != "c2,c3" || u.To != r.End {
		t.Fatalf("naive: liveness witness %v; want c2 and c3 waiting to the end", u)
	}
	if !ensembleTraceHas(r, "c1", "release failed") {
		t.Fatal("naive: c1's release did not fail")
	}
	fixed := ensembleRun(t, "zk-ensemble-lost-delete-fixed", 1)
	if !fixed.Matches() || len(fixed.History.Intervals) != 3 {
		t.Fatalf("fixed: verdict %+v, holds %+v", fixed.Report.Verdict, fixed.History.Intervals)
	}
}

// 19 waiters: 190 watch notifications with one shared node, 19 with the
// queue.
func TestEnsembleHerd(t *testing.T) {
	bubblehost.Bind(t)
	sc := mustGet(t, "zk-ensemble-herd")
	r, cmp, err := RunCompared(sc, sc.Seed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Metric("watch_notifications"); v != 190 || !r.Matches() {
		t.Fatalf("simple: %d notifications, verdict %+v", v, r.Report.Verdict)
	}
	if len(cmp) != 1 || cmp[0].Result.Metrics[0] != (Metric{Name: "watch_notifications", Value: 19}) {
		t.Fatalf("compared queue: %+v", cmp)
	}
	q := ensembleRun(t, "zk-ensemble-queue-no-herd", 1)
	if v, _ := q.Metric("watch_notifications"); v != 19 || !q.Matches() {
		t.Fatalf("queue: %d notifications, verdict %+v", v, q.Report.Verdict)
	}
}

// One seed, one trace: at GOMAXPROCS 1 and 4, twice, for every ensemble
// scenario; another seed gives another trace.
func TestEnsembleSameSeedSameTrace(t *testing.T) {
	bubblehost.Bind(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	all, _ := Catalogue()
	for _, s := range all {
		if !strings.HasPrefix(s.ID, "zk-ensemble-") {
			continue
		}
		runtime.GOMAXPROCS(1)
		one := mustRun(t, s, 7, Options{}).TraceSHA256
		runtime.GOMAXPROCS(4)
		four := mustRun(t, s, 7, Options{}).TraceSHA256
		again := mustRun(t, s, 7, Options{}).TraceSHA256
		if one != four || four != again {
			t.Errorf("%s seed 7: GOMAXPROCS=1 %s, GOMAXPROCS=4 %s, again %s", s.ID, one, four, again)
		}
		if other := mustRun(t, s, 8, Options{}).TraceSHA256; other == one {
			t.Errorf("%s: seeds 7 and 8 gave the same trace", s.ID)
		}
	}
}

// A holder that crashes keeps a ZooKeeper lock until the leader expires
// its session, rounded up to a tick. The exploration setup makes that the
// TTL every algorithm is measured against (2 s session, 500 ms ticks), so
// crashes alone never break the 2×TTL+1s liveness bound of a lock that
// recovers. With ZooKeeper's 2 s tick the session was clamped to 4 s and
// expired up to 6.25 s after the crash, and this exploration reported the
// lock's designed behaviour as a liveness violation (run 7 of seed 3).
func TestExploreEnsembleCrashesWithinTheBound(t *testing.T) {
	bubblehost.Bind(t)
	for _, alg := range []string{"gozk-lock", "gozk-queue"} {
		res, err := Explore(ExploreOptions{Algorithm: alg, Classes: []faults.Class{"crash"}, Runs: 40, Seed: 3, Workers: 1})
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		for _, f := range res.Findings {
			t.Errorf("%s: crashes alone gave a violation in run %d: %s %v", alg, f.Run, f.Property, f.Result.Report.Witness)
		}
		if res.Runs != 40 {
			t.Errorf("%s: %d runs, want 40", alg, res.Runs)
		}
	}
}
