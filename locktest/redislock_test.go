package locktest_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/locktest"
	"github.com/redis/go-redis/v9"
)

// redislockFactory puts github.com/bsm/redislock, unmodified, under test:
// what a user's _test.go would write.
func redislockFactory(clients []*redis.Client) locktest.Lock {
	c := redislock.New(clients[0])
	var held *redislock.Lock
	return locktest.Funcs{
		LockFunc: func(ctx context.Context) (err error) {
			held, err = c.Obtain(ctx, "lock", 2*time.Second, &redislock.Options{Token: locktest.LockValue(ctx)})
			return err
		},
		UnlockFunc: func(ctx context.Context) error { return held.Release(ctx) },
	}
}

// Which catalogue faults break bsm/redislock? A single-instance lock with a
// compare-and-delete release: it survives crashed clients, and breaks — as
// every single-node lease does — when a holder pauses past its TTL, when
// the node's clock jumps forward, or when the node restarts without
// persistence (two holders; holds are judged on what clients do, so a
// holder stalled past its TTL still holds). The ordinary suite runs the
// four classes it asserts on, 60 runs each (the breaks are found within
// the first ten); the deep suite (LOCKLAB_DEEP=1, scripts/test.sh --deep)
// runs every class 500 times and logs what it finds. The README's library
// table comes from TestLibraryTable.
func TestRedislockUnderCatalogueFaults(t *testing.T) {
	classes := []faults.Class{faults.ClassClock, faults.ClassPause, faults.ClassRestart, faults.ClassCrash}
	runs := 60
	if os.Getenv("LOCKLAB_DEEP") == "1" {
		classes, runs = faults.Classes(), 500
	}
	breaks := map[faults.Class]bool{}
	var table []string
	for _, class := range classes {
		res, err := locktest.Explore(redislockFactory, locktest.CheckOptions{TTL: 2 * time.Second, Faults: []faults.Class{class}, Runs: runs})
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%-9s no violation in %d runs", class, res.Runs)
		if len(res.Findings) > 0 {
			f := res.Findings[0]
			breaks[class] = true
			line = fmt.Sprintf("%-9s %s violated (run %d), minimal: %s", class, f.Property, f.Run, describe(f.Minimal.Faults))
		}
		table = append(table, line)
	}
	t.Log("bsm/redislock under locklab's fault classes:\n" + strings.Join(table, "\n"))
	for _, c := range []faults.Class{faults.ClassPause, faults.ClassClock, faults.ClassRestart} {
		if !breaks[c] {
			t.Errorf("%s faults should break a single-instance lock, but exploration found nothing in %d runs", c, runs)
		}
	}
	if breaks[faults.ClassCrash] {
		t.Errorf("client crashes should not break bsm/redislock (its key expires with its TTL)")
	}
}

func describe(s faults.Schedule) string {
	var parts []string
	for _, f := range s {
		parts = append(parts, f.String())
	}
	return strings.Join(parts, "; ")
}

// Check fails the test with the minimal schedule and a replay line, and
// Replay reproduces the saved counterexample.
func TestCheckReportsCounterexampleAndReplays(t *testing.T) {
	rec := &recorder{TB: t}
	locktest.Check(rec, redislockFactory, locktest.CheckOptions{TTL: 2 * time.Second, Faults: []faults.Class{faults.ClassPause}, Runs: 150})
	if !rec.failed {
		t.Fatal("Check did not fail on a lock that a pause breaks")
	}
	msg := rec.msg
	for _, want := range []string{"violated in run", "pause c", "witness:", "replay:  locktest.Replay(t, factory, opts, "} {
		if !strings.Contains(msg, want) {
			t.Fatalf("failure message lacks %q:\n%s", want, msg)
		}
	}
	file := msg[strings.Index(msg, `opts, "`)+7:]
	file = file[:strings.Index(file, `"`)]
	t.Cleanup(func() { os.Remove(file) }) // the failfile Check saved in the temporary directory
	locktest.Replay(t, redislockFactory, locktest.CheckOptions{TTL: 2 * time.Second}, file)
}

func TestCheckNeedsTTL(t *testing.T) {
	rec := &recorder{TB: t}
	func() {
		defer func() { recover() }()
		locktest.Check(rec, redislockFactory, locktest.CheckOptions{})
	}()
	if !rec.failed || !strings.Contains(rec.msg, "Options.TTL") {
		t.Fatalf("missing TTL gave %q", rec.msg)
	}
}

// recorder captures a failure instead of failing the outer test.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Error(args ...any)         { r.failed = true; r.msg += fmt.Sprint(args...) }
func (r *recorder) Errorf(f string, a ...any) { r.failed = true; r.msg += fmt.Sprintf(f, a...) }
func (r *recorder) Fatalf(f string, a ...any) {
	r.failed = true
	r.msg += fmt.Sprintf(f, a...)
	panic("fatal")
}
func (r *recorder) Logf(string, ...any) {}

// bsm/redislock explored again and again in one process, at GOMAXPROCS 1
// and 2: the same first counterexample, shrunk to the same
// schedule with the same trace (docs/design.md, principle 1: its Obtain retries
// on timers and reads time.Now inside the bubble). Ten explorations in
// the deep suite, LOCKLAB_BUBBLE_RUNS=N runs N, as
// scenarios.TestBubbleScenariosReplay does for the catalogue; the CI
// suite skips it (about 2 s an exploration, ten under -race), and
// TestBubbleDeterministicRedlock checks the same bubble runtime there.
func TestRedislockExplorationReplays(t *testing.T) {
	n := 0
	if os.Getenv("LOCKLAB_DEEP") == "1" {
		n = 10
	}
	if v := os.Getenv("LOCKLAB_BUBBLE_RUNS"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			t.Fatalf("LOCKLAB_BUBBLE_RUNS=%q: want a positive number of runs", v)
		}
	}
	if n == 0 {
		t.Skip("explorations replayed only in the deep suite (LOCKLAB_DEEP=1) or with LOCKLAB_BUBBLE_RUNS=N")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var first string
	for i := 0; i < n; i++ {
		runtime.GOMAXPROCS(1 + i%2)
		res, err := locktest.Explore(redislockFactory, locktest.CheckOptions{TTL: 2 * time.Second, Faults: []faults.Class{faults.ClassPause}, Runs: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Findings) == 0 || res.Findings[0].MinimalResult == nil {
			t.Fatalf("exploration %d: no shrunk counterexample in %d runs; pauses past the TTL break redislock", i, res.Runs)
		}
		f := res.Findings[0]
		// res.Runs is left out: it counts the runs the parallel workers had
		// finished when the first finding stopped them, which the machine
		// decides, not the seed.
		got := fmt.Sprintf("run %d: %s, minimal %s (seed %d), trace %s", f.Run, f.Property, describe(f.Minimal.Faults), f.Minimal.Seed, f.MinimalResult.TraceSHA256)
		if i == 0 {
			first = got
			continue
		}
		if got != first {
			t.Fatalf("exploration %d (GOMAXPROCS %d):\n  %s\nfirst:\n  %s", i, 1+i%2, got, first)
		}
	}
	t.Log(first)
}
