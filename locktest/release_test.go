package locktest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// compareAndDelete deletes the key only while it still holds our token:
// the release of redsync, redislock and the Redis documentation's lock.
var compareAndDelete = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)

var errBusy = errors.New("lock busy")

// setNXLock is a single-instance lease, SET key token NX PX ttl. With
// plainDel its release is a plain DEL, with no owner check: the bug issue
// 20 item 5 is about. Without, it releases with compareAndDelete.
func setNXLock(plainDel bool) Factory {
	return func(clients []*redis.Client) Lock {
		c := clients[0]
		var token string
		return Funcs{
			LockFunc: func(ctx context.Context) error {
				token = Token(ctx)
				ok, err := c.SetNX(ctx, "lock", token, 2*time.Second).Result()
				if err != nil {
					return err
				}
				if !ok {
					return errBusy
				}
				return nil
			},
			UnlockFunc: func(ctx context.Context) error {
				if plainDel {
					return c.Del(ctx, "lock").Err()
				}
				return compareAndDelete.Run(ctx, c, []string{"lock"}, token).Err()
			},
		}
	}
}

// observeFindings collects what each class came to, for the duration of
// the test, and runs the test in a temporary directory so that failfiles
// do not land in the package.
func observeFindings(t *testing.T) map[Class]finding {
	t.Chdir(t.TempDir())
	got := map[Class]finding{}
	prev := observe
	observe = func(_ *testing.T, c Class, f finding) { got[c] = f }
	t.Cleanup(func() { observe = prev })
	return got
}

// A plain-DEL release is flagged by the stall class with the default runs
// and seed: its release, held back past the TTL, deletes the next
// holder's key. The same lock releasing with a compare-and-delete passes
// the same runs. Before the stall class held back plain commands too, both
// locks passed.
func TestStallFlagsPlainDelRelease(t *testing.T) {
	got := observeFindings(t)
	Run(t, setNXLock(true), Options{TTL: 2 * time.Second, Classes: []Class{Stall}, Expect: Expect{Stall: MutualExclusion | Resource}})
	f := got[Stall]
	if f.prop&MutualExclusion == 0 {
		t.Fatalf("stall: plain-DEL release not flagged for mutual exclusion: %s in %d runs", f.prop, f.runs)
	}
	if !strings.Contains(describe(t, Stall, f), "of DEL") {
		t.Errorf("stall: the counterexample does not hold back the DEL:\n%s", describe(t, Stall, f))
	}
	Run(t, setNXLock(false), Options{TTL: 2 * time.Second, Classes: []Class{Stall}})
	if f := got[Stall]; f.prop != Safe || f.runs != 40 {
		t.Errorf("stall: compare-and-delete release: %s in %d runs, want safe in 40", f.prop, f.runs)
	}
}

// Options.Persistence is what every drawn restart remembers: with
// appendfsync always a correct single-instance lock survives every restart
// the restart class draws; with none, a restart forgets the key and two
// clients hold the lock.
func TestRestartHonoursPersistence(t *testing.T) {
	got := observeFindings(t)
	Run(t, setNXLock(false), Options{TTL: 2 * time.Second, Classes: []Class{Restart}, Persistence: "always"})
	if f := got[Restart]; f.prop != Safe || f.runs != defaultRuns(Restart) {
		t.Errorf("restart with persistence always: %s in %d runs, want safe in the default %d", f.prop, f.runs, defaultRuns(Restart))
	}
	Run(t, setNXLock(false), Options{TTL: 2 * time.Second, Classes: []Class{Restart}, Persistence: "none", Expect: Expect{Restart: MutualExclusion | Resource}})
	f := got[Restart]
	if f.prop&MutualExclusion == 0 {
		t.Fatalf("restart with persistence none: %s, want mutual exclusion violated", f.prop)
	}
	for _, fl := range f.sc.Faults {
		if fl.Persistence != "" && fl.Persistence != "none" {
			t.Errorf("restart with persistence none drew %s", fl.String())
		}
	}
}

// A saved failfile is replayed first, unless -locktest.seed is given: then
// that seed is explored. Options.Replay replays a failfile from code.
func TestFailfileSeedAndReplay(t *testing.T) {
	got := observeFindings(t)
	opt := Options{TTL: 2 * time.Second, Classes: []Class{Stall}, Expect: Expect{Stall: MutualExclusion | Resource}}
	Run(t, setNXLock(true), opt)
	file := filepath.Join("testdata", "locktest", t.Name(), "stall.yaml")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("no failfile: %v (finding: %s)", err, got[Stall].what)
	}

	Run(t, setNXLock(true), opt)
	if what := got[Stall].what; !strings.Contains(what, "the saved counterexample "+file+", replayed instead of exploring seed 1") {
		t.Errorf("second run: %q, want the saved counterexample replayed", what)
	}

	*flagSeed = 7
	t.Cleanup(func() { *flagSeed = 0 })
	Run(t, setNXLock(true), opt)
	if f := got[Stall]; f.seed != 7 || strings.Contains(f.what, "saved counterexample") {
		t.Errorf("with -locktest.seed=7: seed %d, %q; want seed 7 explored", f.seed, f.what)
	}
	*flagSeed = 0

	replayOpt := opt
	replayOpt.Replay = file
	Run(t, setNXLock(true), replayOpt)
	if f := got[Stall]; f.what != "replay of "+file || f.prop&MutualExclusion == 0 {
		t.Errorf("Options.Replay: %q, %s; want the replay of %s violating mutual exclusion", f.what, f.prop, file)
	}
}

// Run inside synctest.Test and Run in a parallel test fail with a sentence
// saying why, instead of testing's panic.
func TestMisuseIsExplained(t *testing.T) {
	for name, want := range map[string]string{
		"bubble":   errInBubble.Error(),
		"parallel": errParallel.Error(),
	} {
		out, err := helperArgs(t, name, []string{"-test.run=^TestMisuseHelperProcess$"})
		if err == nil {
			t.Errorf("%s: the helper passed:\n%s", name, out)
		}
		if !strings.Contains(out, want) || strings.Contains(out, "panic:") {
			t.Errorf("%s: output lacks %q or panics:\n%s", name, want, out)
		}
	}
}

// TestMisuseHelperProcess is not a test: TestMisuseIsExplained runs it in a
// child process.
func TestMisuseHelperProcess(t *testing.T) {
	opt := Options{TTL: 2 * time.Second, Classes: []Class{Crash}, Runs: 1}
	switch os.Getenv("LOCKTEST_HELPER") {
	case "bubble":
		synctest.Test(t, func(t *testing.T) { Run(t, setNXLock(false), opt) })
	case "parallel":
		t.Parallel()
		Run(t, setNXLock(false), opt)
	default:
		t.Skip("run by TestMisuseIsExplained")
	}
}
