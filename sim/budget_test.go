package sim

import (
	"testing"
	"testing/synctest"
	"time"
)

// spinAtOneInstant spawns a process that loops without letting time pass.
func spinAtOneInstant(w *World) {
	w.NewHost("c1", nil).Spawn("c1", 0, func(p *Process) {
		for {
			p.Sleep(0)
		}
	})
}

// A process that loops without letting time pass ends the run at that
// instant, with no error: the run is cut short there, and Cut says by
// which limit (issue 25: it was an error, exit 2, with no verdict).
func TestTimeThatStopsCutsTheRunShort(t *testing.T) {
	w := New(1)
	w.instantLimit = 1000
	spinAtOneInstant(w)
	if err := w.Run(time.Hour); err != nil {
		t.Fatalf("Run: %v", err)
	}
	c := w.Cut()
	if c == nil || c.Limit != LimitSameInstant || c.At != 0 || c.Budget != 1000 {
		t.Fatalf("cut = %+v", c)
	}
	if w.Now() != 0 {
		t.Fatalf("the run ended at %v, not at the instant time stopped", w.Now())
	}
}

// In a bubble, the kernel sleeps until the next event's time, so the
// clock always equals that time when the event runs: the same-instant
// count must compare events with each other, not with the clock. Before,
// every event of a bubble run counted as one instant, and a 1000-client
// gozk-simple herd was cut at 1.05 s for "events at one instant" that were
// spread over a second.
func TestBubbleCountsEventsAtOneInstantOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(1)
		w.UseBubble()
		w.instantLimit = 100
		w.NewHost("c1", nil).Spawn("c1", 0, func(p *Process) {
			for i := 0; i < 500; i++ {
				p.Sleep(time.Millisecond)
			}
		})
		if err := w.Run(time.Hour); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if c := w.Cut(); c != nil {
			t.Fatalf("500 sleeps of 1 ms were cut short: %+v", c)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		w := New(1)
		w.UseBubble()
		w.instantLimit = 100
		w.NewHost("c1", nil).Spawn("c1", 0, func(p *Process) {
			p.Sleep(time.Second)
			for {
				p.Sleep(0)
			}
		})
		if err := w.Run(time.Hour); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if c := w.Cut(); c == nil || c.Limit != LimitSameInstant || c.At != time.Second {
			t.Fatalf("cut = %+v, want time stopped at 1s", c)
		}
	})
}

// unreachable spawns clients that call a service they cannot reach,
// forever, each call timing out and each lost request counted as work.
func unreachable(w *World, clients int) {
	svc := w.NewHost("svc", nil)
	for i := range clients {
		name := string(rune('a'+i%26)) + string(rune('0'+i/26))
		h := w.NewHost(name, nil)
		w.Net.Cut(name, svc.Name)
		h.Spawn(name, 0, func(p *Process) {
			for {
				p.Call(svc.Name, "GET", "GET x", 50*time.Millisecond, func() (any, string) { return nil, "" })
			}
		})
	}
}

// The work budget ends a run whose every message is lost — no delivered
// message, so a budget on deliveries never tripped — at the instant it is
// spent, as the run's duration would; the work done stays within one
// event's share of the budget, and so does the event queue.
func TestWorkBudgetCutsARunOfLostMessages(t *testing.T) {
	w := New(1)
	w.SetWorkLimit(10_000)
	unreachable(w, 10)
	if err := w.Run(365 * 24 * time.Hour); err != nil {
		t.Fatalf("Run: %v", err)
	}
	c := w.Cut()
	if c == nil || c.Limit != LimitWork || c.Budget != 10_000 {
		t.Fatalf("cut = %+v", c)
	}
	if c.At != w.Now() || c.At <= 0 || c.At > time.Hour {
		t.Fatalf("cut at %v, run ended at %v", c.At, w.Now())
	}
	if c.Work <= 10_000 || c.Work > 10_000+10 || w.Work() != c.Work {
		t.Fatalf("work %d at the cut, %d after: the budget is 10000", c.Work, w.Work())
	}
	if w.Net.Dropped < 1000 || w.Net.Dropped+int(w.Events()) != int(w.Work()) {
		t.Fatalf("work %d = events %d + lost %d?", w.Work(), w.Events(), w.Net.Dropped)
	}
	if n := w.queue.Len(); n > 100 {
		t.Fatalf("%d events still queued after the cut", n)
	}
}

// The same in a bubble.
func TestWorkBudgetCutsABubbleRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(1)
		w.UseBubble()
		w.SetWorkLimit(2_000)
		unreachable(w, 3)
		if err := w.Run(365 * 24 * time.Hour); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if c := w.Cut(); c == nil || c.Limit != LimitWork || c.Work <= 2_000 || c.Work > 2_000+10 {
			t.Fatalf("cut = %+v", c)
		}
	})
}

// The bytes a message carries count, one unit per bytesPerWork: a
// ZooKeeper reply listing a thousand children is more work than one that
// says OK.
func TestWorkCountsTheBytesMessagesCarry(t *testing.T) {
	w := New(1)
	w.NewHost("a", nil)
	w.NewHost("b", nil)
	before := w.Work()
	w.Net.Send(&Message{From: "a", To: "b", Size: 10 * bytesPerWork}, func() {})
	if got := w.Work() - before; got != 1+10 {
		t.Fatalf("a message of %d bytes cost %d units of work, want 1 event + 10", 10*bytesPerWork, got)
	}
}
