package sim

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The non-bubble kernel runs each process as a coroutine (iter.Pull). These
// tests pin the traps of that switch (issue 24): iter.Pull re-raises a
// process's runtime.Goexit in the goroutine that resumed it, so a kill, or a
// process calling Goexit itself, must not end the scheduler; deferred code
// and onExit hooks run in the order they did with channel hand-offs; and no
// process that never finishes leaves a goroutine behind.

// TestKilledProcessUnwindsInOrder crashes a host under a process parked in
// Sleep and under a Parallel helper parked in its job: each unwinds its
// deferred code (a deferred Sleep returns at once), then its onExit hooks,
// while the scheduler goes on and another host's process carries on.
func TestKilledProcessUnwindsInOrder(t *testing.T) {
	w := New(1)
	var log []string
	note := func(s string) { log = append(log, fmt.Sprintf("%v %s", w.Now(), s)) }
	h := w.NewHost("h", nil)
	worker := h.Spawn("worker", 0, func(p *Process) {
		defer note("worker: outer defer")
		defer func() {
			note("worker: inner defer")
			p.Sleep(time.Second) // blocks while unwinding: returns at once
			note("worker: inner defer after sleep")
		}()
		p.OnExit(func() { note("worker: onExit 1") })
		p.OnExit(func() { note("worker: onExit 2") })
		p.Parallel("req", func(c *Process) {
			defer note("helper: defer")
			c.Sleep(10 * time.Second)
			note("helper: woke (must not happen)")
		})
		note("worker: Parallel returned (must not happen)")
	})
	other := w.NewHost("other", nil)
	other.Spawn("other", 0, func(p *Process) {
		for i := 0; i < 3; i++ {
			p.Sleep(time.Second)
			note(fmt.Sprintf("other: tick %d", i))
		}
	})
	w.At(1500*time.Millisecond, h.Crash)
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1s other: tick 0",
		"1.5s worker: inner defer",
		"1.5s worker: inner defer after sleep",
		"1.5s worker: outer defer",
		"1.5s worker: onExit 1",
		"1.5s worker: onExit 2",
		"1.5s helper: defer",
		"2s other: tick 1",
		"3s other: tick 2",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("unwinding order:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if !worker.Done() || !worker.Crashed() || !worker.Killed() {
		t.Fatalf("worker: done %v crashed %v killed %v", worker.Done(), worker.Crashed(), worker.Killed())
	}
}

// TestProcessGoexitEndsOnlyItself: a process whose own code calls
// runtime.Goexit (a t.FailNow inside a process) ends, its deferred code and
// onExit hooks run, and the run goes on to its end.
func TestProcessGoexitEndsOnlyItself(t *testing.T) {
	before := runtime.NumGoroutine()
	w := New(1)
	var log []string
	note := func(s string) { log = append(log, fmt.Sprintf("%v %s", w.Now(), s)) }
	h := w.NewHost("h", nil)
	quitter := h.Spawn("quitter", 0, func(p *Process) {
		defer note("quitter: defer")
		p.OnExit(func() { note("quitter: onExit") })
		p.Sleep(time.Second)
		runtime.Goexit()
	})
	h.Spawn("stayer", 0, func(p *Process) {
		p.Sleep(2 * time.Second)
		note("stayer: woke")
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{"1s quitter: defer", "1s quitter: onExit", "2s stayer: woke"}
	if !slices.Equal(log, want) {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if !quitter.Done() || quitter.Killed() {
		t.Fatalf("quitter: done %v killed %v", quitter.Done(), quitter.Killed())
	}
	if n := settledGoroutines(before); n > before {
		t.Fatalf("goroutines: %d before, %d after the run\n%s", before, n, allStacks())
	}
}

// TestProcessesLeaveNoGoroutines runs many worlds whose processes end in
// every way a run can leave them: Parallel helpers idle between jobs, a
// background watchdog asleep, a process parked on a reply that never comes,
// one not yet started at the run's end, one killed by a crash, one calling
// runtime.Goexit and one panicking. Exploration runs thousands of worlds in
// one process, so none may leave a goroutine behind.
func TestProcessesLeaveNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for seed := uint64(1); seed <= 300; seed++ {
		runEveryEnding(t, seed)
	}
	if n := settledGoroutines(before); n > before {
		t.Fatalf("goroutines: %d before 300 runs, %d after\n%s", before, n, allStacks())
	}
}

func runEveryEnding(t *testing.T, seed uint64) {
	w := New(seed)
	w.Trace.Off = true
	node := w.NewRedisNode("A", nil)
	client := w.NewHost("client", nil)
	cl := node.NewClient(client, ClientOptions{})
	client.Spawn("client", 0, func(p *Process) {
		p.GoBackground("watchdog", func(c *Process) {
			for {
				c.Sleep(100 * time.Millisecond)
			}
		})
		for i := 0; i < 3; i++ {
			p.Parallel("req", func(c *Process) { cl.Set(c.Context(), "k", "a", 0) },
				func(c *Process) { c.Sleep(time.Millisecond) })
		}
	})
	client.Spawn("late", time.Hour, func(p *Process) { t.Error("a process due after the run's end started") })
	cut := w.NewHost("cut", nil)
	ccl := node.NewClient(cut, ClientOptions{})
	cut.Spawn("waiter", 0, func(p *Process) {
		w.Net.Cut("cut", "A")
		ccl.Get(p.Context(), "k") // parked on a reply that never comes
	})
	doomed := w.NewHost("doomed", nil)
	doomed.Spawn("sleeper", 0, func(p *Process) { p.Sleep(time.Hour) })
	w.At(time.Second, doomed.Crash)
	odd := w.NewHost("odd", nil)
	odd.Spawn("quitter", 0, func(p *Process) { p.Sleep(time.Millisecond); runtime.Goexit() })
	panicked := seed%2 == 0
	if panicked {
		odd.Spawn("panicker", 0, func(p *Process) { p.Sleep(2 * time.Second); panic("boom") })
	}
	err := w.Run(5 * time.Second)
	if panicked != (err != nil && strings.Contains(err.Error(), "process panicker panicked: boom")) {
		t.Fatalf("seed %d: Run: %v", seed, err)
	}
}

// settledGoroutines waits (a bounded number of yields, no timing) for
// goroutines that have finished their work to exit, and counts what is left.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 1000 && n > want; i++ {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// BenchmarkProcessSwitch is the kernel's process switch alone: one process
// sleeping a nanosecond at a time, so each iteration is one event, one
// resume by the scheduler and one park back.
func BenchmarkProcessSwitch(b *testing.B) {
	w := New(1)
	w.Trace.Off = true
	h := w.NewHost("h", nil)
	n := b.N
	h.Spawn("sleeper", 0, func(p *Process) {
		for i := 0; i < n; i++ {
			p.Sleep(time.Nanosecond)
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	if err := w.Run(time.Duration(math.MaxInt64)); err != nil {
		b.Fatal(err)
	}
}
