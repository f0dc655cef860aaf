package ensemble

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim"
	record "github.com/locklab/locklab/sim/event"
)

// frozenRun is one go-zookeeper client, c1, with a 6 s session, whose host
// pauses at 1 s for 10 s (stop-the-world), or whose only process hangs for
// as long (hang: a stalled thread while the library's goroutines run).
type frozenRun struct {
	w      *sim.World
	e      *Ensemble
	states []string // session events as the application heard them: "StateDisconnected@11s"
}

func runFrozen(t *testing.T, seed uint64, fault string) *frozenRun {
	t.Helper()
	w := sim.New(seed)
	w.UseBubble()
	r := &frozenRun{w: w, e: NewOnWorld(w, Config{})}
	h := w.NewHost("c1", nil)
	var mu sync.Mutex
	start := time.Now()
	heard := func(ev zk.Event) {
		if ev.Type != zk.EventSession {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		r.states = append(r.states, fmt.Sprintf("%v@%v", ev.State, time.Since(start).Round(time.Millisecond)))
	}
	p := h.Spawn("c1", 0, func(p *sim.Process) {
		var c *zk.Conn
		p.Outside(func() { c, _, _ = r.e.Connect("c1", 0, 6*time.Second, heard) })
		p.Sleep(20 * time.Second)
		p.Outside(c.Close)
	})
	w.At(time.Second, func() {
		switch fault {
		case "pause":
			h.Pause()
			w.After(10*time.Second, h.Resume)
		case "hang":
			p.Hang()
			w.After(10*time.Second, p.Unhang)
		}
	})
	w.Trace.Keep = true
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	return r
}

// heardAt is the instant of the first session event in state s, or -1.
func (r *frozenRun) heardAt(s zk.State) time.Duration {
	for _, x := range r.states {
		name, at, _ := strings.Cut(x, "@")
		if name == s.String() {
			d, _ := time.ParseDuration(at)
			return d
		}
	}
	return -1
}

// A paused client is frozen whole (sim/freeze.go): go-zookeeper's pings
// due during the pause are not sent, its read deadline does not fire, and
// the application hears of the broken connection and the expired session
// only after the resume — though the server expired the session mid-pause.
func TestWorldPausedClientIsFrozenWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := runFrozen(t, 3, "pause")
		for _, ev := range r.w.Trace.Events {
			if ev.Kind == record.FrameReceived && ev.Client == "c1" && ev.At > 1100*time.Millisecond && ev.At < 11*time.Second {
				t.Fatalf("a frame of c1's connection arrived at %v, during c1's pause: %+v", ev.At, ev)
			}
		}
		if r.e.Stats().SessionsExpired != 1 {
			t.Fatalf("%d sessions expired, want 1 (the server's clock runs through the pause)", r.e.Stats().SessionsExpired)
		}
		disc, exp := r.heardAt(zk.StateDisconnected), r.heardAt(zk.StateExpired)
		if disc < 11*time.Second || exp < disc {
			t.Fatalf("c1 heard Disconnected at %v and Expired at %v, want both after its resume at 11s (events %v)", disc, exp, r.states)
		}
	})
}

// A hung thread is not a paused process: c1's only process hangs for the
// same 10 s, go-zookeeper's goroutines keep pinging, and the session
// lives (no event but the first connect).
func TestWorldHungClientKeepsItsSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := runFrozen(t, 3, "hang")
		if n := r.e.Stats().SessionsExpired; n != 0 {
			t.Fatalf("%d sessions expired, want 0", n)
		}
		if d := r.heardAt(zk.StateDisconnected); d >= 0 && d < 20*time.Second {
			t.Fatalf("c1 heard Disconnected at %v, want its session kept (events %v)", d, r.states)
		}
		pings := 0
		for _, ev := range r.w.Trace.Events {
			if ev.Kind == record.FrameReceived && ev.Client == "c1" && ev.At > time.Second && ev.At < 11*time.Second && strings.Contains(ev.Command, "PING") {
				pings++
			}
		}
		if pings < 4 {
			t.Fatalf("%d ping frames of c1 during the hang, want the library's pings every 2 s", pings)
		}
	})
}

// At the resume a goroutine stopped at the door of a write goes first,
// before held work of an earlier instant (sim/freeze.go). c1 (4 s session:
// go-zookeeper pings every 1.33 s) holds an ephemeral node, sleeps until
// 1.2 s and then deletes it; its host pauses from 1.1 s to 3.9 s. The
// worker's wake-up at 1.2 s is held; sendLoop, ticked at 1.33 s, stops at
// the door of its PING, and its ticker ticks again at 2.67 s. Were the
// wake-up run first, the DELETE it queues and the pending tick would both
// be ready when sendLoop comes back to its select, and Go picks one at
// random: one seed gave PING DELETE PING in one run and PING PING DELETE in
// the next (locktest's TestRunZooKeeperFindsPausedHolder did not replay).
// With the writer first, every run sends PING PING DELETE.
func TestWorldResumeLetsTheStoppedWriterGoFirst(t *testing.T) {
	for run := range 12 {
		var sent []string
		synctest.Test(t, func(t *testing.T) {
			w := sim.New(5)
			w.UseBubble()
			w.Trace.Keep = true
			e := NewOnWorld(w, Config{})
			h := w.NewHost("c1", nil)
			h.Spawn("c1", 0, func(p *sim.Process) {
				var c *zk.Conn
				p.Outside(func() {
					c, _, _ = e.Connect("c1", 0, 4*time.Second, nil)
					c.Create("/orders", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
				})
				p.Sleep(1200*time.Millisecond - p.TrueNow())
				p.Outside(func() { c.Delete("/orders", -1) })
				p.Sleep(time.Second) // the frames sent at the resume arrive
			})
			w.At(1100*time.Millisecond, func() {
				h.Pause()
				w.After(2800*time.Millisecond, h.Resume)
			})
			if err := w.Run(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			for _, ev := range w.Trace.Events {
				if ev.Kind == record.FrameReceived && ev.Client == "c1" && ev.Dir == string(sim.Request) && ev.Conn == "c1#1>zk1" && ev.At >= 3900*time.Millisecond && len(sent) < 3 {
					sent = append(sent, ev.Op)
				}
			}
		})
		if got := strings.Join(sent, " "); got != "PING PING DELETE" {
			t.Fatalf("run %d: at the resume c1#1 sent %q, want PING PING DELETE (the stopped writer, its pending tick, then the worker's DELETE)", run, got)
		}
	}
}
