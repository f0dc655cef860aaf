package locktest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/redis/go-redis/v9"
)

// redlock is redsync's Redlock over every node, with redsync's default
// options: 8s expiry, 32 tries, random retry delays from math/rand and
// lock values from crypto/rand.
func redlock(clients []*redis.Client) Lock {
	var pools []redsyncredis.Pool
	for _, c := range clients {
		pools = append(pools, goredis.NewPool(c))
	}
	m := redsync.New(pools...).NewMutex("orders")
	return Funcs{
		LockFunc:   m.LockContext,
		UnlockFunc: func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err },
	}
}

// redlockScenario is 5 clients on 5 nodes for 10 simulated seconds, with a
// pause and a clock jump so that the run has faults to replay.
func redlockScenario(t testing.TB) *scenarios.Scenario {
	opt := Options{TTL: 8 * time.Second, Nodes: 5, Clients: 5, Cycles: 3, Work: time.Second, Duration: 10 * time.Second}
	if err := opt.defaults(); err != nil {
		t.Fatal(err)
	}
	sc, err := opt.base()
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) *faults.Duration { v := faults.Duration(d); return &v }
	sc.Faults = faults.Schedule{
		{Kind: faults.Pause, Target: "c2", At: at(1500 * time.Millisecond), Duration: faults.Duration(9 * time.Second)},
		{Kind: faults.ClockJump, Target: "C", At: at(3 * time.Second), Jump: faults.Duration(9 * time.Second)},
	}
	sc.Seed = 42
	return sc
}

// runOnce runs sc in a new bubble, as Run does, and returns its result.
func runOnce(t *testing.T, f Factory, opt Options, sc *scenarios.Scenario) *runner.Result {
	var res *runner.Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = runner.Run(sc, sc.Seed, runner.Options{
			Factory: f.algorithm(opt.TTL, opt.Renews, opt.Fencing),
			Bubble:  true,
			Prepare: func(seed uint64) { seedProcessRandom(t, seed) },
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	return res
}

// The same seed gives the same trace digest whatever GOMAXPROCS is (and
// under -race, where the suite runs in CI): redsync's goroutine per node,
// its timers, retries and random values all follow the run's seed. Four
// runs; LOCKLAB_BUBBLE_RUNS=N runs N (at least four), as
// scenarios.TestBubbleScenariosReplay does for the catalogue.
func TestBubbleDeterministicRedlock(t *testing.T) {
	sc := redlockScenario(t)
	opt := Options{TTL: 8 * time.Second}
	runs := 4
	if v := os.Getenv("LOCKLAB_BUBBLE_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("LOCKLAB_BUBBLE_RUNS=%q: want a positive number of runs", v)
		}
		runs = max(n, 4)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var digests []string
	var first *runner.Result
	for i := 0; i < runs; i++ {
		runtime.GOMAXPROCS([]int{1, 4, 1, 2}[i%4])
		res := runOnce(t, redlock, opt, sc)
		if first == nil {
			first = res
		}
		digests = append(digests, res.TraceSHA256)
	}
	for i, d := range digests[1:] {
		if d != digests[0] {
			t.Fatalf("run %d digest %s differs from the first run's %s", i+2, d, digests[0])
		}
	}
	if first.TraceLines < 500 {
		t.Fatalf("only %d trace lines: the Redlock run did not run", first.TraceLines)
	}
	t.Logf("verdict %+v, %d trace lines, digest %s", first.Report.Verdict, first.TraceLines, digests[0])
}

// helper runs the test case named by LOCKTEST_HELPER in a child process,
// for the tests that check how locktest fails.
func helper(t *testing.T, name string, env ...string) (string, error) {
	return helperArgs(t, name, nil, env...)
}

func helperArgs(t *testing.T, name string, args []string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "-test.v"}, args...)...)
	cmd.Env = append(append(os.Environ(), "LOCKTEST_HELPER="+name), env...)
	cmd.Dir, _ = os.Getwd()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var outsideChan = make(chan struct{}) // made outside every bubble

// TestHelperProcess is not a test: helper runs it in a child process.
func TestHelperProcess(t *testing.T) {
	never := func(clients []*redis.Client) Lock {
		block := make(chan struct{})
		return Funcs{
			LockFunc:   func(ctx context.Context) error { <-block; return nil },
			UnlockFunc: func(ctx context.Context) error { return nil },
		}
	}
	outsider := func(clients []*redis.Client) Lock {
		return Funcs{
			LockFunc:   func(ctx context.Context) error { <-outsideChan; return nil },
			UnlockFunc: func(ctx context.Context) error { return nil },
		}
	}
	if os.Getenv("LOCKTEST_HELPER") == "" {
		t.Skip("run by other tests")
	}
	dir := os.Getenv("LOCKTEST_DIR")
	if dir == "" {
		dir = t.TempDir() // failfiles go there, not into this package
	}
	wd, _ := os.Getwd()
	os.Chdir(dir)
	defer os.Chdir(wd)
	switch os.Getenv("LOCKTEST_HELPER") {
	case "blocked":
		Run(t, never, Options{TTL: time.Second, Classes: []Class{Crash, Drop}, Runs: 2})
	case "outside":
		Run(t, outsider, Options{TTL: time.Second, Classes: []Class{Crash}, Runs: 2})
	case "ticker":
		Run(t, func(clients []*redis.Client) Lock {
			return Funcs{
				LockFunc: func(ctx context.Context) error {
					go func() { // a renewal nobody stops
						for range time.Tick(time.Second) {
						}
					}()
					return nil
				},
				UnlockFunc: func(ctx context.Context) error { return nil },
			}
		}, Options{TTL: time.Second, Classes: []Class{Crash}, Runs: 1})
	case "mismatched-replay":
		t.Run("semaphore", func(t *testing.T) {
			RunSemaphore(t, setNXLock(false), 2, Options{TTL: 2 * time.Second, Classes: []Class{Stall}})
		})
		t.Run("mysql", func(t *testing.T) {
			RunSQL(t, DriverMySQL, getLockPinned, Options{TTL: 2 * time.Second, Classes: []Class{Drop}})
		})
	case "hunt-hides-liveness":
		// Three runs: run 3 breaks liveness only, no run overlaps.
		RunZooKeeper(t, zkNewLock, Options{TTL: 4 * time.Second, Classes: []Class{Pause}, Runs: 3, Hunt: Hunt{Pause: MutualExclusion}})
	case "semaphore-heading":
		RunSemaphore(t, slotSemaphore(2), 2, Options{TTL: 2 * time.Second, Classes: []Class{Pause}})
	case "unexpected":
		Run(t, redlock, Options{TTL: 8 * time.Second, Nodes: 1, Classes: []Class{Pause, Drop}, Runs: 30, Expect: Expect{Drop: Any}})
	}
}

// A lock blocked for good on a channel of its own fails every class with
// what blocked, and the test binary goes on.
func TestBlockedLockIsReported(t *testing.T) {
	out, err := helper(t, "blocked")
	if err == nil {
		t.Fatalf("the helper passed:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestHelperProcess/crash", "--- FAIL: TestHelperProcess/drop",
		"did not return within 10m0s of simulated time",
		"chan receive (durable): github.com/locklab/locklab/locktest.TestHelperProcess.func1.1 at ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "panic:") {
		t.Errorf("the helper panicked:\n%s", out)
	}
}

// A lock that waits on something outside the bubble is reported within
// seconds, naming the wait, instead of hanging until go test's timeout.
func TestOutsideWaitIsReported(t *testing.T) {
	out, err := helper(t, "outside", "LOCKTEST_STALL=2s")
	if err == nil {
		t.Fatalf("the helper passed:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestHelperProcess/crash",
		"no progress for 2s of real time: the lock waits on something outside the simulation",
		"chan receive: github.com/locklab/locklab/locktest.TestHelperProcess.func2.1 at ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// An unexpected violation fails its class only, with the counterexample,
// the witness, a replay command and the failfile; a class expected Any
// passes; the pass log names the real seed.
func TestUnexpectedViolationFailsItsClass(t *testing.T) {
	out, err := helper(t, "unexpected")
	if err == nil {
		t.Fatalf("the helper passed:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestHelperProcess/pause",
		"--- PASS: TestHelperProcess/drop",
		"locktest: pause (Run at runtime_test.go:",
		"): mutual exclusion and resource violated, expected safe",
		"found in run ",
		"witness: lost update",
		"replay:  go test -run '^TestHelperProcess$/^pause$' -locktest.replay=testdata/locktest/TestHelperProcess/pause.yaml",
		"(seed 1)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A goroutine of the lock that never ends is named when its class ends.
func TestEndlessGoroutineIsReported(t *testing.T) {
	out, err := helper(t, "ticker")
	if err == nil {
		t.Fatalf("the helper passed:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestHelperProcess/crash",
		"goroutines of the lock outlived the runs",
		"chan receive (durable): github.com/locklab/locklab/locktest.TestHelperProcess.func",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The failure's replay command reproduces it: the replay prints the same
// witness, and -locktest.report writes the HTML report it names.
func TestReplayAndReport(t *testing.T) {
	dir := t.TempDir()
	out, _ := helper(t, "unexpected", "LOCKTEST_DIR="+dir)
	i := strings.Index(out, "witness: lost update")
	if i < 0 {
		t.Fatalf("no witness in the failure:\n%s", out)
	}
	witness, _, _ := strings.Cut(out[i:], "\n")
	report := filepath.Join(dir, "out.html")
	out2, err := helperArgs(t, "unexpected", []string{"-test.run=^TestHelperProcess$/^pause$", "-locktest.replay=testdata/locktest/TestHelperProcess/pause.yaml", "-locktest.report=" + report}, "LOCKTEST_DIR="+dir)
	if err == nil {
		t.Fatalf("the replay of a failure passed:\n%s", out2)
	}
	for _, want := range []string{witness, "found in replay of testdata/locktest/TestHelperProcess/pause.yaml", "report:  " + filepath.Join(dir, "out-pause.html")} {
		if !strings.Contains(out2, want) {
			t.Errorf("replay output lacks %q:\n%s", want, out2)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "out-pause.html"))
	if err != nil || !strings.Contains(string(data), "<html") {
		t.Fatalf("no HTML report: %v", err)
	}
	// The report of a failing class says it does not match the test's
	// expectation, and draws the lock's key ("orders"), which is not
	// named lock (issue 31, item 5).
	for _, bad := range []string{"The run matches the scenario's expectation", "no lock key"} {
		if strings.Contains(string(data), bad) {
			t.Errorf("the report of a failing class says %q", bad)
		}
	}
	if !strings.Contains(string(data), "The run does NOT match the scenario's expectation") {
		t.Errorf("the report of a failing class does not say it fails its expectation")
	}
}
