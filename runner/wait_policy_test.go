package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

// An algorithm's wait policy is the algorithm's (issue 31): the workload
// calls Acquire once per cycle, and when the lock's policy gives up (its
// attempts run out with the lock busy) the cycle goes without the lock and
// the give-up is a typed event. Before, the workload retried every failed
// Acquire itself, so wait.attempts could never change a verdict: here c1
// pauses past its lease, and c2, which gives up after three tries, would
// have gone on trying and taken the expired key while c1 still acts.
func TestWaitPolicyGivesUp(t *testing.T) {
	const tmpl = `id: gives-up
algorithm: set-nx-px-lua
ttl: 2s
wait: {delay: 100ms, attempts: ATTEMPTS}
nodes: [A]
clients:
  count: 2
  cycles: 1
  each:
    c1: {start: 0s, work: 100ms}
    c2: {start: 100ms, work: 100ms}
duration: 20s
faults:
  - kind: pause
    target: c1
    duration: 5s
    after: {client: c1, op: READ}
`
	run := func(attempts string) *Result {
		sc, err := scenarios.Parse("x.yaml", []byte(strings.Replace(tmpl, "ATTEMPTS", attempts, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return mustRun(t, sc, 1, Options{KeepTrace: true})
	}
	r := run("3")
	var gaveUp []event.Event
	for _, e := range r.Events {
		if e.Kind == event.AcquireGaveUp {
			gaveUp = append(gaveUp, e)
		}
	}
	if len(gaveUp) != 1 || gaveUp[0].Client != "c2" || !strings.Contains(gaveUp[0].Reason, "not acquired") {
		t.Fatalf("give-ups %+v, want one by c2", gaveUp)
	}
	for _, iv := range r.History.Intervals {
		if iv.Client == "c2" {
			t.Fatalf("c2 holds %v after giving up", iv)
		}
	}
	var c2 *checker.Want
	for i, w := range r.History.Wants {
		if w.Client == "c2" {
			c2 = &r.History.Wants[i]
		}
	}
	if c2 == nil || c2.Outcome != "gave up" || c2.To-c2.From > 500_000_000 {
		t.Fatalf("c2's want %+v, want one that gave up after three tries", c2)
	}
	if v := r.Report.Verdict; v.MutualExclusion != checker.OK || v.Liveness != checker.OK {
		t.Fatalf("verdict %+v; c2 gave up before c1's key expired", v)
	}
	// Trying until acquired (attempts 0, the default), c2 takes the key
	// when it expires at 2 s, while the paused c1 still believes it holds.
	if v := run("0").Report.Verdict.MutualExclusion; v != checker.Violated {
		t.Fatalf("attempts 0: mutual exclusion %s, want violated", v)
	}
}

// errorsAsBusy is set-nx-px-lua with a broken wait policy: it retries
// every error itself, after its wait delay, as if the lock were busy,
// instead of reporting it to its caller (as go-redis's redislock does).
type errorsAsBusy struct {
	algorithms.Lock
	delay time.Duration
}

func (l errorsAsBusy) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	for {
		lease, err := l.Lock.Acquire(env)
		if err == nil || errors.Is(err, algorithms.ErrNotAcquired) {
			return lease, err
		}
		env.Sleep(l.delay)
	}
}

// Which errors a lock retries is its wait policy's business, and it can
// change a verdict (issue 31): the workload calls again after an error
// only as the application would, after its think time. Here the master
// dies under c1's lock and c2's calls time out until B is promoted at 1 s.
// The correct lock reports each timeout, c2's application calls again
// within 50 ms and takes the lock on B while c1 still works: two holders.
// The broken lock sleeps its 3 s busy-lock delay after the timeout and
// comes back after c1 released: one holder. Before, the workload itself
// waited the lock's wait delay after every error, so the two gave the same
// verdict.
func TestWaitPolicyErrorsChangeVerdict(t *testing.T) {
	sc, err := scenarios.Parse("x.yaml", []byte(`id: errors-retried
algorithm: set-nx-px-lua
ttl: 10s
wait: {delay: 3s}
nodes:
  - A
  - {name: B, replica_of: A, lag: 100ms}
clients:
  count: 2
  cycles: 1
  each:
    c1: {start: 0s, work: 2500ms}
    c2: {start: 5ms..20ms}
duration: 40s
faults:
  - kind: node-crash
    target: A
    after: {client: c1, op: SET}
  - kind: failover
    target: B
    at: 1s
`))
	if err != nil {
		t.Fatal(err)
	}
	correct := mustRun(t, sc, 1, Options{KeepTrace: true})
	if v := correct.Report.Verdict.MutualExclusion; v != checker.Violated {
		t.Fatalf("set-nx-px-lua: mutual exclusion %s, want violated (c2 back within its think time)", v)
	}
	timeouts := 0
	for _, e := range correct.Events {
		if e.Kind == event.AcquireFailed && e.Client == "c2" && strings.Contains(e.Reason, "timeout") {
			timeouts++
		}
	}
	if timeouts < 2 {
		t.Fatalf("c2's calls failed %d times with a timeout, want the application's retries recorded", timeouts)
	}
	broken := mustRun(t, sc, 1, Options{Factory: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
		l, err := algorithms.Build("set-nx-px-lua", p, c)
		return errorsAsBusy{Lock: l, delay: p.Wait.Delay}, err
	}})
	if v := broken.Report.Verdict; v.MutualExclusion != checker.OK || v.Resource != checker.OK {
		t.Fatalf("errors retried as busy: verdict %+v, want ok (c2 back after c1 released)", v)
	}
}
