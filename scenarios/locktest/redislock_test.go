package locktest_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios/locktest"
	"github.com/redis/go-redis/v9"
)

// redislockFactory puts github.com/bsm/redislock, unmodified, under test:
// what a user's _test.go would write.
func redislockFactory(clients []*redis.Client) locktest.Lock {
	c := redislock.New(clients[0])
	var held *redislock.Lock
	return locktest.Funcs{
		LockFunc: func(ctx context.Context) (err error) {
			held, err = c.Obtain(ctx, "lock", 2*time.Second, &redislock.Options{Token: locktest.Token(ctx)})
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
