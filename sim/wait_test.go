package sim

import (
	"testing"
	"time"
)

func TestWaiterSignalTimeoutBroadcast(t *testing.T) {
	w := New(1)
	h := w.NewHost("h", nil)
	var cond Waiter
	var log []string
	note := func(p *Process, what string) {
		log = append(log, p.Name+" "+what+" at "+p.w.Now().String())
	}
	h.Spawn("a", 0, func(p *Process) {
		note(p, "signalled="+boolText(cond.Wait(p, NoTimeout)))
	})
	h.Spawn("b", 0, func(p *Process) {
		note(p, "signalled="+boolText(cond.Wait(p, 50*time.Millisecond)))
	})
	h.Spawn("c", time.Millisecond, func(p *Process) {
		note(p, "signalled="+boolText(cond.Wait(p, time.Second)))
	})
	h.Spawn("d", 0, func(p *Process) {
		p.Sleep(100 * time.Millisecond)
		if n := cond.Waiting(); n != 2 {
			t.Errorf("waiting at 100ms: %d, want 2 (b timed out)", n)
		}
		if !cond.Signal() {
			t.Errorf("Signal found nobody")
		}
		p.Sleep(100 * time.Millisecond)
		if n := cond.Broadcast(); n != 1 {
			t.Errorf("Broadcast woke %d, want 1", n)
		}
		if cond.Signal() {
			t.Errorf("Signal with nobody waiting reported a wake-up")
		}
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"b signalled=false at 50ms",
		"a signalled=true at 100ms", // the longest waiter goes first
		"c signalled=true at 200ms",
	}
	if len(log) != len(want) {
		t.Fatalf("log %q, want %q", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("log %q, want %q", log, want)
		}
	}
}

func TestWaiterHoldsWakeupDuringPause(t *testing.T) {
	w := New(1)
	h := w.NewHost("h", nil)
	other := w.NewHost("o", nil)
	var cond Waiter
	var woke time.Duration = -1
	h.Spawn("waiter", 0, func(p *Process) {
		cond.Wait(p, NoTimeout)
		woke = p.w.Now()
	})
	other.Spawn("signaller", 0, func(p *Process) {
		p.Sleep(time.Second)
		cond.Signal()
	})
	w.At(500*time.Millisecond, h.Pause)
	w.At(3*time.Second, h.Resume)
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if woke != 3*time.Second {
		t.Fatalf("woke at %v, want 3s (the signal arrived during the pause)", woke)
	}
}

func TestWaiterTimeoutFollowsOscillator(t *testing.T) {
	w := New(1)
	// A clock running 1% fast counts 100ms of local time in about 99ms.
	h := w.NewHost("h", NewClock(0, 10_000))
	var at time.Duration
	h.Spawn("p", 0, func(p *Process) {
		var cond Waiter
		p.Host.Clock.Jump(0, time.Hour) // a wall-clock jump changes nothing
		cond.Wait(p, 100*time.Millisecond)
		at = p.w.Now()
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if want := NewClock(0, 10_000).TrueDuration(0, 100*time.Millisecond); at != want {
		t.Fatalf("timed out at %v, want %v", at, want)
	}
}

func TestWaiterKilledWaiterIsForgotten(t *testing.T) {
	w := New(1)
	h := w.NewHost("h", nil)
	var cond Waiter
	h.Spawn("waiter", 0, func(p *Process) { cond.Wait(p, NoTimeout) })
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if n := cond.Waiting(); n != 0 {
		t.Fatalf("%d waiters left after the run killed the process", n)
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
