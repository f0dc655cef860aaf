package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
)

// zkScenarios are the ZooKeeper rows of the catalogue and their twins.
var zkScenarios = []string{
	"zk-session-expiry-pause", "zk-session-expiry-pause-fenced",
	"zk-suspended-vs-lost", "zk-suspended-vs-lost-fixed",
	"zk-lost-create-reply", "zk-lost-create-reply-fixed",
	"zk-herd-effect", "zk-queue-no-herd", "zk-clock-jump",
}

func zkMetric(t *testing.T, ms []Metric, name string) int64 {
	t.Helper()
	for _, m := range ms {
		if m.Name == name {
			return m.Value
		}
	}
	t.Fatalf("no metric %q in %+v", name, ms)
	return 0
}

func zkWantVerdict(t *testing.T, r *Result, me, res, live checker.Status) {
	t.Helper()
	want := checker.Verdict{MutualExclusion: me, Resource: res, Liveness: live}
	if r.Report.Verdict != want {
		t.Fatalf("verdict %+v, want %+v; witness %+v", r.Report.Verdict, want, r.Report.Witness)
	}
	if !r.Matches() {
		t.Fatalf("the run does not match the scenario's expectation %+v", r.Scenario.Expect)
	}
}

func zkTraceCount(r *Result, actor, text string) int {
	n := 0
	for _, e := range r.Trace {
		if (actor == "" || e.Actor == actor) && strings.Contains(e.Text, text) {
			n++
		}
	}
	return n
}

func TestZooKeeperScenariosAreInTheCatalogue(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range all {
		if strings.HasPrefix(s.ID, "zk-") && !strings.HasPrefix(s.ID, "zk-ensemble-") {
			got = append(got, s.ID)
			if s.Narrative.What == "" || s.Narrative.Why == "" || s.Narrative.Fix == "" || len(s.Narrative.Sources) == 0 {
				t.Errorf("%s: narrative incomplete", s.ID)
			}
			if s.Expect == (Expect{}) {
				t.Errorf("%s: no expectation", s.ID)
			}
			if !strings.HasPrefix(s.Algorithm, "zk-") {
				t.Errorf("%s: algorithm %s", s.ID, s.Algorithm)
			}
		}
	}
	if len(got) != len(zkScenarios) {
		t.Fatalf("zk scenarios in the catalogue: %v, want %v", got, zkScenarios)
	}
	if names := mustGet(t, "zk-herd-effect").Names(); !strings.Contains(strings.Join(names.Others, " "), "zk") {
		t.Fatalf("fault schedules cannot name the ZooKeeper host: %+v", names)
	}
}

func TestZKSessionExpiryPause(t *testing.T) {
	r := mustRun(t, mustGet(t, "zk-session-expiry-pause"), 1, Options{KeepTrace: true})
	zkWantVerdict(t, r, checker.Violated, checker.Violated, checker.OK)
	o := r.Report.Witness.MutualExclusion
	if o.First.Client != "c1" || o.Second.Client != "c2" {
		t.Fatalf("overlap between %s and %s, want c1 and c2: %v", o.First.Client, o.Second.Client, o)
	}
	// c2 took the lock when the server expired c1's session, 6 s after
	// c1's last contact; c1 believed it held until it woke at 11 s.
	if o.Second.Start < 6*time.Second || o.Second.Start > 6100*time.Millisecond || o.First.End < 11*time.Second {
		t.Fatalf("overlap %v", o)
	}
	rw := r.Report.Witness.Resource
	if rw.Kind != "lost update" || rw.Write.Client != "c1" || rw.Write.Based != 100 || rw.Overwritten.Client != "c3" {
		t.Fatalf("resource witness %v", rw)
	}
	if zkMetric(t, r.Metrics, "sessions_expired") != 1 {
		t.Fatalf("metrics %+v", r.Metrics)
	}
	if zkTraceCount(r, "zk", " of c1 expired") != 1 || zkTraceCount(r, "c1", "zk state SUSPENDED") != 1 || zkTraceCount(r, "c1", "zk state LOST") != 1 {
		t.Fatalf("the trace does not tell the story")
	}
}

func TestZKSessionExpiryPauseFenced(t *testing.T) {
	r := mustRun(t, mustGet(t, "zk-session-expiry-pause-fenced"), 1, Options{})
	zkWantVerdict(t, r, checker.Violated, checker.OK, checker.OK)
	if o := r.Report.Witness.MutualExclusion; o.First.Client != "c1" || o.Second.Client != "c2" || o.First.Fence != 1 || o.Second.Fence != 2 {
		t.Fatalf("overlap %v (fences %d, %d)", o, o.First.Fence, o.Second.Fence)
	}
	var rejected []checker.Access
	for _, a := range r.History.Accesses {
		if a.Kind == "write" && !a.Accepted {
			rejected = append(rejected, a)
		}
	}
	if len(rejected) != 1 || rejected[0].Client != "c1" || rejected[0].Fence != 1 || rejected[0].Reason != "token 1 is lower than 3" {
		t.Fatalf("rejected writes %+v, want c1's stale write with token 1", rejected)
	}
	if m := r.Report.Metrics; m.Writes != 2 || m.FinalValue != 98 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestZKSuspendedVsLost(t *testing.T) {
	r := mustRun(t, mustGet(t, "zk-suspended-vs-lost"), 1, Options{KeepTrace: true})
	zkWantVerdict(t, r, checker.Violated, checker.OK, checker.OK)
	o := r.Report.Witness.MutualExclusion
	if o.First.Client != "c1" || o.First.EndReason != "lost" || o.Second.Client != "c2" {
		t.Fatalf("overlap %v", o)
	}
	// From the server's expiry (6 s after the last contact) to LOST (one
	// session timeout after SUSPENDED, 10 s after it): four seconds.
	if d := o.To - o.From; d < 3900*time.Millisecond || d > 4*time.Second {
		t.Fatalf("overlap lasts %v, want just under 4s: %v", d, o)
	}
	suspended := zkAt(t, r, "c1", "zk state SUSPENDED")
	expired := zkAt(t, r, "zk", " of c1 expired")
	lost := zkAt(t, r, "c1", "zk state LOST")
	if !(suspended < expired && expired < lost) || lost-suspended != 6*time.Second {
		t.Fatalf("SUSPENDED at %v, expiry at %v, LOST at %v", suspended, expired, lost)
	}
	if expired-suspended < 1990*time.Millisecond || expired-suspended > 2*time.Second {
		t.Fatalf("expiry %v after SUSPENDED, want about 2s", expired-suspended)
	}
}

func zkAt(t *testing.T, r *Result, actor, text string) time.Duration {
	t.Helper()
	for _, e := range r.Trace {
		if e.Actor == actor && strings.Contains(e.Text, text) {
			return e.At
		}
	}
	t.Fatalf("no trace line %q by %s", text, actor)
	return 0
}

func TestZKSuspendedVsLostFixed(t *testing.T) {
	r := mustRun(t, mustGet(t, "zk-suspended-vs-lost-fixed"), 1, Options{})
	zkWantVerdict(t, r, checker.OK, checker.OK, checker.OK)
	iv := r.History.Intervals
	if len(iv) != 2 || iv[0].Client != "c1" || iv[0].EndReason != "lost" || iv[1].Client != "c2" || iv[1].Start <= iv[0].End {
		t.Fatalf("intervals %+v", iv)
	}
	if gap := iv[1].Start - iv[0].End; gap < 1990*time.Millisecond || gap > 2010*time.Millisecond {
		t.Fatalf("c1 stopped %v before c2 started, want about 2s", gap)
	}
}

func TestZKLostCreateReply(t *testing.T) {
	r := mustRun(t, mustGet(t, "zk-lost-create-reply"), 1, Options{KeepTrace: true})
	zkWantVerdict(t, r, checker.OK, checker.OK, checker.Violated)
	u := r.Report.Witness.Liveness
	if strings.Join(u.Waiting, ",") != "c1,c3" || u.To != r.End || u.From > 1100*time.Millisecond {
		t.Fatalf("liveness witness %v", u)
	}
	if zkMetric(t, r.Metrics, "orphaned_znodes") != 1 {
		t.Fatalf("metrics %+v", r.Metrics)
	}
	// The orphan: c1's first node, whose reply was dropped, and the second
	// node its blind retry made.
	if zkTraceCount(r, "zk", "dropped reply zk→c1 created /locks/lock/lock-0000000001") != 1 {
		t.Fatalf("no dropped create reply for lock-0000000001")
	}
	if zkTraceCount(r, "c1", "send CREATE /locks/lock/lock- ephemeral-sequential") != 2 || zkTraceCount(r, "zk", "created /locks/lock/lock-0000000004") != 1 {
		t.Fatalf("c1 did not create a second node")
	}
}

func TestZKLostCreateReplyFixed(t *testing.T) {
	r := mustRun(t, mustGet(t, "zk-lost-create-reply-fixed"), 1, Options{KeepTrace: true})
	zkWantVerdict(t, r, checker.OK, checker.OK, checker.OK)
	if zkMetric(t, r.Metrics, "orphaned_znodes") != 0 || zkMetric(t, r.Metrics, "znodes_created") != 5 {
		t.Fatalf("metrics %+v", r.Metrics) // /locks, /locks/lock and one node per client
	}
	if r.Report.Metrics.Acquisitions != 3 || zkTraceCount(r, "c1", "send CREATE /locks/lock/_c_") != 1 {
		t.Fatalf("c1 should have found its node instead of creating another")
	}
}

func TestZKHerdEffect(t *testing.T) {
	sc := mustGet(t, "zk-herd-effect")
	if sc.Clients.Count != 101 || sc.Algorithm != "zk-simple" || strings.Join(sc.Compare, ",") != "zk-queue" {
		t.Fatalf("scenario %+v", sc)
	}
	r, cmp, err := RunCompared(sc, sc.Seed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	zkWantVerdict(t, r, checker.OK, checker.OK, checker.OK)
	if n := zkMetric(t, r.Metrics, "watch_notifications"); n != 5050 {
		t.Fatalf("zk-simple: %d watch notifications, want exactly 5050 (100+99+...+1)", n)
	}
	if len(cmp) != 1 || cmp[0].Algorithm != "zk-queue" {
		t.Fatalf("comparisons %+v", cmp)
	}
	if n := zkMetric(t, cmp[0].Metrics, "watch_notifications"); n != 100 {
		t.Fatalf("zk-queue: %d watch notifications, want exactly 100", n)
	}
	if v := cmp[0].Verdict; v != (checker.Verdict{MutualExclusion: checker.OK, Resource: checker.OK, Liveness: checker.OK}) {
		t.Fatalf("zk-queue verdict %+v", v)
	}
	if r.Report.Metrics.Acquisitions != 101 || cmp[0].Result.Report.Metrics.Acquisitions != 101 {
		t.Fatalf("acquisitions: %d and %d", r.Report.Metrics.Acquisitions, cmp[0].Result.Report.Metrics.Acquisitions)
	}
	r2, cmp2, err := RunCompared(sc, sc.Seed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.TraceSHA256 != r2.TraceSHA256 || cmp[0].Result.TraceSHA256 != cmp2[0].Result.TraceSHA256 {
		t.Fatalf("same seed, different traces")
	}
}

func TestZKClockJump(t *testing.T) {
	r := mustRun(t, mustGet(t, "zk-clock-jump"), 1, Options{})
	zkWantVerdict(t, r, checker.OK, checker.OK, checker.OK)
	if len(r.Applied) != 4 || zkMetric(t, r.Metrics, "sessions_expired") != 0 || r.Report.Metrics.Acquisitions != 9 {
		t.Fatalf("applied %d faults, metrics %+v %+v", len(r.Applied), r.Metrics, r.Report.Metrics)
	}
	for _, h := range r.Hosts {
		if h.Name == "zk" && (h.Role != "zookeeper" || len(h.Clock) != 2) {
			t.Fatalf("zk host %+v", h)
		}
	}
}

func TestZooKeeperScenariosAreDeterministic(t *testing.T) {
	for _, id := range zkScenarios {
		if id == "zk-herd-effect" {
			continue // checked in TestZKHerdEffect
		}
		sc := mustGet(t, id)
		a := mustRun(t, sc, sc.Seed, Options{})
		b := mustRun(t, sc, sc.Seed, Options{KeepTrace: true})
		if a.TraceSHA256 != b.TraceSHA256 || a.TraceLines != b.TraceLines {
			t.Errorf("%s: same seed, different traces", id)
		}
		c := mustRun(t, sc, sc.Seed+1, Options{})
		if a.TraceSHA256 == c.TraceSHA256 {
			t.Errorf("%s: different seeds, same trace", id)
		}
	}
}

func TestZooKeeperBackendParams(t *testing.T) {
	sc := mustGet(t, "zk-suspended-vs-lost")
	for key, bad := range map[string]string{"session_timeout": "soon", "lost_after": "-1s", "request_timeout": "0"} {
		c := sc.Clone()
		c.Params[key] = bad
		if _, err := Run(c, 1, Options{}); err == nil || !strings.Contains(err.Error(), "params."+key) {
			t.Errorf("%s=%q: error %v", key, bad, err)
		}
	}
	// Issue 25: a 1 ns or 1 µs session never ended (1.1 GiB).
	for _, tiny := range []string{"1ns", "1us", "1ms"} {
		c := sc.Clone()
		c.Params["session_timeout"] = tiny
		if _, err := Run(c, 1, Options{}); err == nil || !strings.Contains(err.Error(), "params.session_timeout: expected a duration between 2ms and 1h") {
			t.Errorf("session_timeout=%s: error %v; want a refusal naming the 2ms floor", tiny, err)
		}
	}
	c := sc.Clone()
	c.Params["guid_protection"] = "perhaps"
	if _, err := Run(c, 1, Options{}); err == nil || !strings.Contains(err.Error(), "params.guid_protection") {
		t.Errorf("bad guid_protection: error %v", err)
	}
	// A shorter session timeout moves the whole story earlier.
	c = sc.Clone()
	c.Params["session_timeout"] = "3s"
	c.Params["lost_after"] = "3s"
	r := mustRun(t, c, 1, Options{KeepTrace: true})
	if got := zkAt(t, r, "c1", "zk state LOST") - zkAt(t, r, "c1", "zk state SUSPENDED"); got != 3*time.Second {
		t.Fatalf("LOST %v after SUSPENDED, want 3s", got)
	}
}
