package bubblehost_test

import (
	cryptorand "crypto/rand"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/locklab/locklab/sim/bubblehost"
)

// Run with no host says what to do; this test binds nothing before it.
func TestRunWithoutHostIsErrNoHost(t *testing.T) {
	ran := false
	err := bubblehost.Run(func() { ran = true })
	if !errors.Is(err, bubblehost.ErrNoHost) || ran {
		t.Fatalf("Run without a host: err %v, fn ran %v", err, ran)
	}
	const want = "bubblehost: no host for a synctest bubble: a program must call bubblehost.Main(realMain) from func main, and a test must call bubblehost.Bind(t) before Run"
	if err.Error() != want {
		t.Fatalf("message:\n%s\nwant:\n%s", err, want)
	}
}

func TestBindRunsBubblesWithVirtualTime(t *testing.T) {
	t.Run("bound", func(t *testing.T) {
		bubblehost.Bind(t)
		for i := 0; i < 2; i++ {
			var slept time.Duration
			wall := time.Now()
			err := bubblehost.Run(func() {
				start := time.Now()
				time.Sleep(time.Hour)
				slept = time.Since(start)
			})
			if err != nil || slept != time.Hour {
				t.Fatalf("run %d: err %v, slept %v (want 1h of virtual time)", i, err, slept)
			}
			if d := time.Since(wall); d > time.Minute {
				t.Fatalf("run %d took %v of real time", i, d)
			}
		}
		// A panic in fn is an error, and the next bubble still runs.
		err := bubblehost.Run(func() { panic("lock client exploded") })
		var pe *bubblehost.PanicError
		if !errors.As(err, &pe) || pe.Value != "lock client exploded" || !strings.HasPrefix(err.Error(), "panic inside the synctest bubble: lock client exploded\n\ngoroutine ") {
			t.Fatalf("panic: %v", err)
		}
		err = bubblehost.Run(func() { <-make(chan struct{}) })
		var de *bubblehost.DeadlockError
		if !errors.As(err, &de) || de.Reason != "deadlock: all goroutines in bubble are blocked" || len(de.Blocked) != 1 ||
			!strings.HasPrefix(de.Blocked[0], "chan receive (durable): github.com/locklab/locklab/sim/bubblehost_test.TestBindRunsBubblesWithVirtualTime.func1.") ||
			!strings.Contains(de.Blocked[0], "/sim/bubblehost/bubblehost_test.go:") {
			t.Fatalf("deadlock: %#v", err)
		}
		err = bubblehost.Run(runtime.Goexit)
		if err == nil || err.Error() != "synctest bubble: fn ended by runtime.Goexit (a t.Fatal or t.FailNow called inside the bubble?)" {
			t.Fatalf("Goexit: %v", err)
		}
		if err := bubblehost.Run(func() { time.Sleep(time.Second) }); err != nil {
			t.Fatalf("after failures: %v", err)
		}
	})
	// Bind undid itself when the subtest ended.
	if err := bubblehost.Run(func() {}); !errors.Is(err, bubblehost.ErrNoHost) {
		t.Fatalf("after the bound test ended: %v", err)
	}
}

func TestRunDoesNotNest(t *testing.T) {
	bubblehost.Bind(t)
	var inner error
	if err := bubblehost.Run(func() { inner = bubblehost.Run(func() {}) }); err != nil {
		t.Fatal(err)
	}
	if inner == nil || inner.Error() != "bubblehost: Run called inside a synctest bubble; bubbles do not nest" {
		t.Fatalf("nested Run: %v", inner)
	}
}

// TestHostedProgram builds testdata/hostprog with `go build` (no testing
// package of its own in charge) and checks that bubbles run in it and that
// every way they fail reaches stderr and the exit status, never stdout,
// whose only lines are the program's own. This is the test that notices
// when a new Go release changes what testing.MainStart does.
func TestHostedProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "hostprog")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/hostprog").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
		stderr []string // substrings, in order
	}{
		// Time is virtual (an hour of sleep, at once), two bubbles in a
		// row, and the program's flags (testing's included) are its own.
		{[]string{"sleep", "-v", "--json", "-test.v"}, 0,
			"args [\"sleep\" \"-v\" \"--json\" \"-test.v\"]\nrun 1 slept 1h0m0s\nrun 2 slept 1h0m0s\n", nil},
		{[]string{"panic"}, 1, "args [\"panic\"]\n",
			[]string{"hostprog: panic inside the synctest bubble: boom in the bubble\n\ngoroutine ", "main.realMain.func2()"}},
		{[]string{"deadlock"}, 1, "args [\"deadlock\"]\n",
			[]string{"hostprog: synctest bubble: deadlock: all goroutines in bubble are blocked:\n  chan receive (durable): main.realMain.func3 at "}},
		{[]string{"leak"}, 1, "args [\"leak\"]\n",
			[]string{"hostprog: synctest bubble: deadlock: main bubble goroutine has exited but blocked goroutines remain:\n  select (no cases) (durable): main.realMain.func4.1 at "}},
		// A panic in a goroutine fn started kills the process, as in any
		// Go program: the runtime's message, status 2.
		{[]string{"gopanic"}, 2, "args [\"gopanic\"]\n",
			[]string{"panic: boom in a goroutine of the bubble\n\ngoroutine "}},
		{[]string{"mainpanic"}, 2, "args [\"mainpanic\"]\n",
			[]string{"panic: boom in main\n\ngoroutine ", "main.realMain()"}},
		{[]string{"exit"}, 3, "args [\"exit\"]\n", nil},
	} {
		cmd := exec.Command(bin, c.args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if code != c.code || stdout.String() != c.stdout {
			t.Errorf("%v: exit %d (want %d), stdout %q (want %q); stderr:\n%s", c.args, code, c.code, stdout.String(), c.stdout, stderr.String())
			continue
		}
		rest := stderr.String()
		for _, want := range c.stderr {
			i := strings.Index(rest, want)
			if i < 0 {
				t.Errorf("%v: stderr lacks %q (in order):\n%s", c.args, want, stderr.String())
				break
			}
			rest = rest[i+len(want):]
		}
		if c.stderr == nil && stderr.Len() != 0 {
			t.Errorf("%v: stderr not empty:\n%s", c.args, stderr.String())
		}
		for _, chatter := range []string{"PASS", "FAIL", "=== RUN", "ok "} {
			if strings.Contains(stdout.String()+stderr.String(), chatter) {
				t.Errorf("%v: testing's chatter %q in the output", c.args, chatter)
			}
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%v: took %v of real time", c.args, d)
		}
	}
}

// The locklab command cannot use testing/cryptotest (it panics outside
// `go test`), so RunSeeded makes its own stream; it must be the very
// stream cryptotest gives a test for the same seed, or a run would differ
// between the command and a test.
func TestSeededStreamIsCryptotests(t *testing.T) {
	var want, got, again [48]byte
	t.Run("cryptotest", func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 42)
		io.ReadFull(cryptorand.Reader, want[:16])
		cryptorand.Read(want[16:])
	})
	t.Run("RunSeeded", func(t *testing.T) {
		bubblehost.Bind(t)
		before := cryptorand.Reader
		for _, buf := range []*[48]byte{&got, &again} {
			err := bubblehost.RunSeeded(42, func() {
				io.ReadFull(cryptorand.Reader, buf[:16])
				cryptorand.Read(buf[16:])
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if cryptorand.Reader != before {
			t.Fatal("crypto/rand.Reader not restored after RunSeeded")
		}
	})
	if got != want || again != want {
		t.Fatalf("RunSeeded(42) drew %x then %x; cryptotest with seed 42 draws %x", got, again, want)
	}
}

// Bubbles of concurrent RunSeeded calls run side by side, and each draws
// its own seed's stream however the reads of the others interleave: the
// bytes a run draws, and so its trace, do not depend on explore's workers.
func TestConcurrentSeededBubblesDrawTheirOwnStreams(t *testing.T) {
	bubblehost.Bind(t)
	draw := func(seed uint64) (b [64]byte) {
		err := bubblehost.RunSeeded(seed, func() {
			for i := 0; i < len(b); i += 8 {
				time.Sleep(time.Millisecond) // virtual: lets the others read between
				io.ReadFull(cryptorand.Reader, b[i:i+8])
			}
		})
		if err != nil {
			t.Error(err)
		}
		return b
	}
	want := map[uint64][64]byte{}
	for seed := uint64(1); seed <= 6; seed++ {
		want[seed] = draw(seed)
	}
	before := cryptorand.Reader
	got := make([][64]byte, 7)
	started := make(chan struct{})
	done := make(chan struct{})
	for seed := uint64(1); seed <= 6; seed++ {
		go func() {
			defer func() { done <- struct{}{} }()
			<-started
			err := bubblehost.RunSeeded(seed, func() {
				for i := 0; i < 64; i += 8 {
					runtime.Gosched()
					io.ReadFull(cryptorand.Reader, got[seed][i:i+8])
				}
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	close(started)
	for range 6 {
		<-done
	}
	for seed := uint64(1); seed <= 6; seed++ {
		if got[seed] != want[seed] {
			t.Errorf("seed %d drew %x in parallel, %x alone", seed, got[seed], want[seed])
		}
	}
	if cryptorand.Reader != before {
		t.Fatal("crypto/rand.Reader not restored after the parallel bubbles")
	}
}
