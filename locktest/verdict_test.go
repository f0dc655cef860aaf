package locktest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
	"github.com/redis/go-redis/v9"
)

// AtMost asserts an upper bound: safe, or only the properties named.
func TestExpectAtMost(t *testing.T) {
	for _, c := range []struct {
		expect, prop Outcome
		want         bool
	}{
		{AtMost | Liveness, Safe, true},
		{AtMost | Liveness, Liveness, true},
		{AtMost | Liveness, MutualExclusion | Liveness, false},
		{AtMost | Liveness, Resource, false},
		{AtMost, Safe, true},
		{AtMost, Liveness, false},
		{Liveness, Safe, false}, // without AtMost, a violation is asserted
		{Liveness, Liveness, true},
	} {
		if got := met(c.expect, c.prop); got != c.want {
			t.Errorf("expect %s, found %s: met %v, want %v", c.expect, c.prop.found(), got, c.want)
		}
	}
	if got := (AtMost | Liveness).String(); got != "at most liveness violated" {
		t.Errorf("AtMost|Liveness reads %q", got)
	}
	// In a run: the compare-and-delete lock is safe under drop, which
	// "at most liveness" accepts.
	got := observeFindings(t)
	Run(t, setNXLock(false), Options{TTL: 2 * time.Second, Classes: []Class{Drop}, Runs: 10, Expect: Expect{Drop: AtMost | Liveness}})
	if f := got[Drop]; f.prop != Safe || f.expect != AtMost|Liveness {
		t.Errorf("drop: %s expected %s", f.prop.found(), f.expect)
	}
}

// A semaphore's heading names its permits, a reader-writer lock's its
// readers and writers; a mutex's reads as before.
func TestHeadingNamesThePrimitive(t *testing.T) {
	opt := Options{TTL: 2 * time.Second}
	if err := opt.defaults(); err != nil {
		t.Fatal(err)
	}
	mutex, err := opt.base()
	if err != nil {
		t.Fatal(err)
	}
	sem := mutex.Clone()
	sem.Clients.Permits = 2
	rw := mutex.Clone()
	read := scenarios.ModeRead
	rw.Clients.Each = map[string]scenarios.Client{"c1": {Mode: &read}}
	for _, c := range []struct {
		base *scenarios.Scenario
		want string
	}{
		{mutex, "mutual exclusion and resource violated"},
		{sem, "permit limit (at most 2 holders at once) and resource violated"},
		{rw, "reader-writer exclusion (a writer holds alone, readers share) and resource violated"},
	} {
		if got := (MutualExclusion | Resource).named(" and ", exclusionName(c.base)); got != c.want {
			t.Errorf("%s: %q, want %q", lockKind(c.base), got, c.want)
		}
	}
	out, err := helper(t, "semaphore-heading")
	if err == nil {
		t.Fatalf("the helper passed:\n%s", out)
	}
	if !strings.Contains(out, "): permit limit (at most 2 holders at once) violated, expected safe") {
		t.Errorf("the semaphore's failure is not headed by its permits:\n%s", out)
	}
}

// The counterexample names the user's calls that returned an error, the
// error and the fault before it.
func TestCallsNameTheUsersErrors(t *testing.T) {
	res := &runner.Result{
		Events: []event.Event{
			{At: time.Second, Kind: event.AcquireFailed, Client: "c2", Reason: "lock not acquired: lock busy"},
			{At: 2 * time.Second, Kind: event.AcquireFailed, Client: "c2", Reason: "lock not acquired: lock busy"},
			{At: 3 * time.Second, Kind: event.ReleaseFailed, Client: "c1", Reason: "pg_advisory_unlock: lock was not held by this session"},
		},
		Applied: []faults.Applied{{At: 2500 * time.Millisecond, Fault: faults.Fault{Kind: faults.Pause, Target: "c1", Duration: faults.Duration(time.Second)}}},
	}
	var b strings.Builder
	writeCalls(&b, res)
	for _, want := range []string{
		`calls:   c2's Lock returned "lock busy" at 1.000s (2 times), before any fault`,
		`calls:   c1's Unlock returned "pg_advisory_unlock: lock was not held by this session" at 3.000s, after the fault pause c1 for 1s (applied at 2.500s)`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("calls lack %q:\n%s", want, b.String())
		}
	}
	// In a run: a release that finds its key gone says so in the
	// counterexample.
	got := observeFindings(t)
	Run(t, strictRelease, Options{TTL: 2 * time.Second, Classes: []Class{Pause}, Expect: Expect{Pause: Any}})
	f := got[Pause]
	if f.res == nil {
		t.Fatalf("pause: no counterexample in %d runs", f.runs)
	}
	if d := describe(t, Pause, f); !strings.Contains(d, `'s Unlock returned "lock was not held"`) {
		t.Errorf("the counterexample does not name the failed Unlock:\n%s", d)
	}
}

var errNotHeld = errors.New("lock was not held")

// strictRelease is the compare-and-delete lock whose Unlock says when the
// key was no longer its own.
func strictRelease(clients []*redis.Client) Lock {
	c := clients[0]
	var token string
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			token = Token(ctx)
			ok, err := c.SetNX(ctx, "lock", token, 2*time.Second).Result()
			if err == nil && !ok {
				err = errBusy
			}
			return err
		},
		UnlockFunc: func(ctx context.Context) error {
			n, err := compareAndDelete.Run(ctx, c, []string{"lock"}, token).Int()
			if err == nil && n == 0 {
				err = errNotHeld
			}
			return err
		},
	}
}

// The report is judged against the test's expectation, and finds the
// user's key.
func TestReportResult(t *testing.T) {
	sc := &scenarios.Scenario{ID: "x", Key: "lock", Expect: scenarios.Expect{MutualExclusion: checker.Violated}}
	res := &runner.Result{Scenario: sc, Report: &checker.Report{Verdict: checker.Verdict{MutualExclusion: checker.Violated, Resource: checker.OK, Liveness: checker.OK}},
		Events: []event.Event{{Kind: event.CommandSent, Args: []string{"SET", "orders", "tok", "NX", "PX", "2000"}}}}
	if !res.Matches() {
		t.Fatal("the shrinker's expect block matches its own run")
	}
	r := reportResult(res, Safe)
	if r.Matches() {
		t.Errorf("a violation reported against Expect safe matches")
	}
	if r.Scenario.Key != "orders" || sc.Key != "lock" {
		t.Errorf("report key %q (scenario's %q), want orders (lock untouched)", r.Scenario.Key, sc.Key)
	}
	if !reportResult(res, MutualExclusion).Matches() {
		t.Errorf("a violation the test expects does not match")
	}
}

// An option of another route is refused, not ignored.
func TestForeignOptionsAreRefused(t *testing.T) {
	for _, c := range []struct {
		opt   Options
		route route
		want  string
	}{
		{Options{ZooKeeper: ZooKeeper{Params: map[string]string{"zk_servers": "5"}}}, routeRedis, "Options.ZooKeeper is for RunZooKeeper"},
		{Options{Database: Database{Params: map[string]string{"pooler": "session"}}}, routeRedis, "Options.Database is for RunPostgres"},
		{Options{Database: Database{PoolSize: 3}}, routeZooKeeper, "Options.Database is for RunPostgres"},
		{Options{ZooKeeper: ZooKeeper{Params: map[string]string{"zk_servers": "5"}}}, routeDatabase, "Options.ZooKeeper is for RunZooKeeper"},
	} {
		if err := c.opt.refuseForeign(c.route); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("route %d: %v, want %q", c.route, err, c.want)
		}
	}
	if err := (&Options{ZooKeeper: ZooKeeper{Params: map[string]string{"zk_servers": "5"}}}).refuseForeign(routeZooKeeper); err != nil {
		t.Errorf("zookeeper route refuses its own params: %v", err)
	}
}
