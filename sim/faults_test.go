package sim

import (
	"testing"
	"time"
)

func TestNodeClockJumpsMoveExpiry(t *testing.T) {
	for _, c := range []struct {
		name   string
		jump   time.Duration
		at     time.Duration // when we look, after setting a 10s key at 0
		exists bool
	}{
		{"no jump", 0, 9 * time.Second, true},
		// Forward: the node's clock passes the expiry early.
		{"forward", 5 * time.Second, 6 * time.Second, false},
		// Backward: Redis keeps absolute expiry times, so the key lives longer.
		{"backward", -5 * time.Second, 12 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := New(1)
			clock := NewClock(0, 0)
			n := w.NewRedisNode("A", clock)
			var exists int64
			if c.jump != 0 {
				w.At(time.Second, func() { clock.Jump(w.Now(), c.jump) })
			}
			h := w.NewHost("c2", nil)
			cl2 := n.NewClient(h, ClientOptions{})
			h.Spawn("c2", 0, func(p *Process) {
				cl2.Set(p.Context(), "k", "v", 10*time.Second)
				p.Sleep(c.at)
				exists = cl2.Exists(p.Context(), "k").Val()
			})
			if err := w.Run(time.Hour); err != nil {
				t.Fatal(err)
			}
			if (exists == 1) != c.exists {
				t.Fatalf("key exists=%d at %v, want %v", exists, c.at, c.exists)
			}
		})
	}
}

func TestPersistenceModes(t *testing.T) {
	for _, c := range []struct {
		mode string
		want []string // keys present after the restart
	}{
		{"none", nil},
		// everysec keeps what was written before the last whole second.
		{"everysec", []string{"early"}},
		{"always", []string{"early", "late"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			w := New(1)
			n := w.NewRedisNode("A", nil)
			h := w.NewHost("c1", nil)
			cl := n.NewClient(h, ClientOptions{})
			var got []string
			h.Spawn("c1", 0, func(p *Process) {
				cl.Set(p.Context(), "early", "1", time.Minute)
				p.Sleep(1500 * time.Millisecond)
				cl.Set(p.Context(), "late", "1", time.Minute)
				p.Sleep(100 * time.Millisecond)
				w.At(w.Now(), func() { n.Crash() })
				w.At(w.Now()+time.Second, func() { n.Restart(c.mode) })
				p.Sleep(2 * time.Second)
				got = n.Miniredis().Keys()
			})
			if err := w.Run(time.Hour); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) || (len(got) > 1 && got[1] != c.want[1]) {
				t.Fatalf("keys after restart %v, want %v", got, c.want)
			}
		})
	}
}

func TestReplicationLagAndLossOnCrash(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.Replicate(b, 100*time.Millisecond)
	h := w.NewHost("c1", nil)
	cl := a.NewClient(h, ClientOptions{})
	var beforeLag, afterLag, lost bool
	h.Spawn("c1", 0, func(p *Process) {
		cl.Set(p.Context(), "x", "1", 0)
		beforeLag = b.Miniredis().Exists("x")
		p.Sleep(200 * time.Millisecond)
		afterLag = b.Miniredis().Exists("x")
		cl.Set(p.Context(), "y", "1", 0)
		w.At(w.Now(), a.Crash) // dies before y is shipped
		p.Sleep(time.Second)
		lost = !b.Miniredis().Exists("y")
	})
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if beforeLag || !afterLag || !lost {
		t.Fatalf("replica had x before the lag: %v, after: %v; y lost with the master: %v", beforeLag, afterLag, lost)
	}
	if err := b.Promote(); err != nil || a.current() != b {
		t.Fatalf("promote: %v, current %s", err, a.current().Name)
	}
	if err := a.Promote(); err == nil {
		t.Fatal("promoting a master should fail")
	}
}

// A hung worker stops; the other processes of its host (a watchdog) go on.
// A paused host stops them all.
func TestHangVersusPause(t *testing.T) {
	for _, pause := range []bool{false, true} {
		w := New(1)
		h := w.NewHost("c1", nil)
		var worker, watchdog int
		main := h.Spawn("c1", 0, func(p *Process) {
			p.GoBackground("watchdog", func(c *Process) {
				for {
					c.Sleep(100 * time.Millisecond)
					watchdog++
				}
			})
			for i := 0; i < 10; i++ {
				p.Sleep(100 * time.Millisecond)
				worker++
			}
		})
		w.At(250*time.Millisecond, func() {
			if pause {
				h.Pause()
			} else {
				main.Hang()
			}
		})
		if err := w.Run(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if worker != 2 {
			t.Fatalf("pause=%v: worker ran %d steps, want 2 before it stopped", pause, worker)
		}
		if pause && watchdog != 2 || !pause && watchdog < 40 {
			t.Fatalf("pause=%v: watchdog ran %d steps", pause, watchdog)
		}
	}
}

func TestClockFirstReachesAndDrift(t *testing.T) {
	c := NewClock(0, 20_000) // 2% fast
	if got := c.Local(10 * time.Second); got != 10200*time.Millisecond {
		t.Fatalf("local after 10s at +2%%: %v", got)
	}
	at, ok := c.FirstReaches(10*time.Second, 0, time.Minute)
	if !ok || at < 9803*time.Millisecond || at > 9804*time.Millisecond {
		t.Fatalf("reaches 10s local at %v (ok %v), want about 9.8039s", at, ok)
	}
	c.Jump(time.Second, -time.Second)
	if _, ok := c.FirstReaches(time.Hour, 0, time.Minute); ok {
		t.Fatal("reached a reading beyond the horizon")
	}
	if d := c.TrueDuration(0, 1020*time.Millisecond); d != time.Second {
		t.Fatalf("a 1.02s sleep on a 2%% fast oscillator takes %v of true time, want 1s", d)
	}
}

// A monotonic clock ignores steps of the wall clock but not drift.
func TestOscillatorIgnoresJumpsNotDrift(t *testing.T) {
	c := NewClock(time.Second, 0)
	c.Jump(2*time.Second, -5*time.Second)
	c.SetRate(4*time.Second, 10_000) // 1% fast from 4 s
	o := c.Oscillator()
	if got := c.Local(3 * time.Second); got != -time.Second {
		t.Fatalf("wall at 3s: %v, want -1s after the 5 s step back", got)
	}
	if got := o.Local(3 * time.Second); got != 4*time.Second {
		t.Fatalf("oscillator at 3s: %v, want 4s (offset 1 s, no step)", got)
	}
	if got := o.Local(14 * time.Second); got != 15*time.Second+100*time.Millisecond {
		t.Fatalf("oscillator at 14s: %v, want 15.1s (10 s at +1%%)", got)
	}
}
