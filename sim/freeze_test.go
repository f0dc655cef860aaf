package sim

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/locklab/locklab/sim/event"
)

// A paused host is frozen whole (freeze.go), Redis connections and the
// lock's own goroutines included: c1's code sleeps 2 s while a goroutine
// of its own sends a PING at 1.2 s and another reports at 1.5 s (as a
// renewal goroutine reports a lost lease); c1 pauses from 1 s to 5 s. Nothing of
// c1 takes effect during the pause; at the resume its held work runs in
// the order it was due: the PING, the report, the return from the lock's
// code.
func TestPausedHostIsFrozenWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(2)
		w.UseBubble()
		w.Trace.Keep = true
		h := w.NewHost("c1", nil)
		cl := w.NewRedisNode("A", nil).NewClient(h, ClientOptions{})
		var order []string
		h.Spawn("c1", 0, func(p *Process) {
			pinged, reported := make(chan struct{}), make(chan struct{})
			p.Outside(func() {
				go func() {
					defer close(pinged)
					time.Sleep(1200 * time.Millisecond)
					cl.Ping(context.Background())
				}()
				go func() {
					defer close(reported)
					time.Sleep(1500 * time.Millisecond)
					p.Notify(func() { order = append(order, "report at "+w.Now().String()) })
				}()
				time.Sleep(2 * time.Second)
			})
			order = append(order, "return at "+p.TrueNow().String())
			p.Outside(func() { <-pinged; <-reported })
		})
		w.At(time.Second, func() {
			h.Pause()
			w.After(4*time.Second, h.Resume)
		})
		if err := w.Run(time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(order, ", "); got != "report at 5s, return at 5s" {
			t.Fatalf("c1's work ran as %q, want the report, then the return, at the resume (5s)", got)
		}
		pinged := false
		for _, ev := range w.Trace.Events {
			if ev.Kind != event.CommandSent || ev.Client != "c1" {
				continue
			}
			pinged = pinged || strings.Contains(strings.ToLower(ev.Command), "ping")
			if ev.At < 5*time.Second {
				t.Fatalf("c1 sent %s at %v, during its pause (1s to 5s)", ev.Command, ev.At)
			}
		}
		if !pinged {
			t.Fatal("c1 never sent its PING")
		}
	})
}
