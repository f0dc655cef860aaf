package ensemble

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim"
)

func dur(d time.Duration) faults.Duration { return faults.Duration(d) }
func at(d time.Duration) *faults.Duration { x := faults.Duration(d); return &x }
func targets(r *lockRun) faults.Targets {
	hosts := map[string]*sim.Host{}
	for n, h := range r.hosts {
		hosts[n] = h
	}
	for _, h := range r.e.Hosts() {
		hosts[h.Name] = h
	}
	return faults.Targets{Clients: r.hosts, Hosts: hosts}
}

// scheduleOfEverything is a pause on a trigger, a partition between
// servers that heals, a delay and a drop.
func scheduleOfEverything() faults.Schedule {
	return faults.Schedule{
		{Kind: faults.Pause, After: &faults.Trigger{Op: "CREATE", Client: "c2"}, Target: "c2", Duration: dur(200 * time.Millisecond)},
		{Kind: faults.Partition, At: at(time.Second), Groups: [][]string{{"zk1"}, {"zk2", "zk3"}}, Duration: dur(2 * time.Second)},
		{Kind: faults.Delay, Client: "c3", Op: "GETCHILDREN2", Dir: "request", Duration: dur(300 * time.Millisecond), Count: 1},
		{Kind: faults.Drop, Client: "c1", Op: "PING", Dir: "reply", Count: 1},
	}
}

// TestWorldFaultSchedule arms a fault schedule with faults.Arm, as a YAML
// scenario does: a pause triggered by c2's CREATE reply (the trigger runs
// while the ensemble delivers that reply, and the pause acts on the
// ensemble at once), a partition of zk1 from its peers that heals, a
// delayed GETCHILDREN2 request of c3's, and a dropped ping reply to c1.
// Every fault fires, matches, and shows in the trace; the lock still works
// and nobody overlaps.
func TestWorldFaultSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var firing *faults.Firing
		sched := scheduleOfEverything()
		cfg := Config{TickTime: 500 * time.Millisecond, SyncLimit: 2}
		r := runLocks(lockSpec{seed: 11, cfg: cfg, rounds: 3, hold: 2 * time.Second, arm: func(r *lockRun) {
			firing = faults.ArmWatched(r.w, targets(r), sched, nil)
		}})
		r.check(t, 3)
		if o := r.overlaps(); len(o) > 0 {
			t.Fatalf("holds overlap: %v", o)
		}
		if silent := firing.Silent(sched, nil); len(silent) > 0 {
			t.Fatalf("faults changed nothing: %v", silent)
		}
		mustContain(t, r,
			"c2         pause", "c2         resume",
			"link zk1–zk2 cut", "link zk1–zk3 cut", "zk1        stops serving", "link zk1–zk2 healed",
			"delayed request c3→zk3 GETCHILDREN2 /lock by 300ms (fault: ",
			"reset: reply PING → ok lost (fault: ")
	})
}

// TestWorldClientCrash: the holder's host crashes (Host.Crash); its
// connection resets, it never dials again, its session expires after the
// session timeout, and the others take the lock.
func TestWorldClientCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var crashed string
		r := runLocks(lockSpec{seed: 12, rounds: 2, hold: 500 * time.Millisecond, arm: func(r *lockRun) {
			r.w.At(100*time.Millisecond, func() {
				crashed = r.holding
				r.hosts[crashed].Crash()
			})
		}})
		if r.err != nil {
			t.Fatal(r.err)
		}
		for _, c := range []string{"c1", "c2", "c3"} {
			want := 2
			if c == crashed {
				want = 0
			}
			if n := r.count(c); n != want {
				t.Fatalf("%s held the lock %d times, want %d\n%s", c, n, want, r.trace())
			}
		}
		if r.e.Stats().SessionsExpired != 1 {
			t.Fatalf("%d sessions expired, want the crashed client's", r.e.Stats().SessionsExpired)
		}
		tr := r.trace()
		if strings.Contains(tr, "connect "+crashed+"#2") {
			t.Fatalf("crashed host %s dialled again:\n%s", crashed, tr)
		}
		mustContain(t, r, crashed+"         crash", "connection "+crashed+"#1>", "reset: client host crashed", "expired (no contact for")
	})
}

// TestWorldServerCrashRestart: a follower crashes and restarts; its host
// is down on the world's network meanwhile, its client moves on with its
// session, and after the restart it serves again.
func TestWorldServerCrashRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var downDuring, downAfter bool
		r := runLocks(lockSpec{seed: 13, rounds: 3, hold: 300 * time.Millisecond, arm: func(r *lockRun) {
			r.w.At(200*time.Millisecond, func() { r.e.Crash("zk1") })
			r.w.At(700*time.Millisecond, func() { downDuring = r.w.Net.Down("zk1") })
			r.w.At(time.Second, func() { r.e.Restart("zk1") })
			r.w.At(1200*time.Millisecond, func() { downAfter = r.w.Net.Down("zk1") })
		}})
		r.check(t, 3)
		if o := r.overlaps(); len(o) > 0 {
			t.Fatalf("holds overlap: %v", o)
		}
		if !downDuring || downAfter {
			t.Fatalf("zk1 down on the network during the crash %v, after the restart %v; want true, false", downDuring, downAfter)
		}
		if r.e.Leader() != "zk3" || r.e.Stats().Elections != 0 {
			t.Fatalf("a follower's crash changed the leader: %q, %d elections", r.e.Leader(), r.e.Stats().Elections)
		}
		mustContain(t, r, "zk1        crash", "connection c1#1>zk1 reset: zk1 crashed", "zk1        restart (", "zk1        follows zk3 and serves")
	})
}

// TestWorldClientCrashWhileWaiting: a client crashes while it waits inside
// go-zookeeper's Lock. Its goroutines stay still (its dials wait for the
// run's end), its queued lock node goes when its session expires, the
// others take the lock, and at the run's end its Lock call returns, so
// the run winds down.
func TestWorldClientCrashWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var crashed string
		r := runLocks(lockSpec{seed: 14, rounds: 2, hold: 500 * time.Millisecond, arm: func(r *lockRun) {
			r.w.At(100*time.Millisecond, func() {
				for _, c := range []string{"c1", "c2", "c3"} {
					if c != r.holding {
						crashed = c
						break
					}
				}
				r.hosts[crashed].Crash()
			})
		}})
		if r.err != nil {
			t.Fatal(r.err)
		}
		for _, c := range []string{"c1", "c2", "c3"} {
			want := 2
			if c == crashed {
				want = 0
			}
			if n := r.count(c); n != want {
				t.Fatalf("%s held the lock %d times, want %d\n%s", c, n, want, r.trace())
			}
		}
		if o := r.overlaps(); len(o) > 0 {
			t.Fatalf("holds overlap: %v", o)
		}
		if r.e.Stats().SessionsExpired != 1 {
			t.Fatalf("%d sessions expired, want the crashed client's", r.e.Stats().SessionsExpired)
		}
		mustContain(t, r, crashed+"         crash", "reset: client host crashed", "expired (no contact for")
	})
}

// TestWorldMinorityWriteWaitsForItsLeader: a write sent to a follower cut
// off from its leader does not commit while the cut lasts (the forward
// waits in the follower's link to the leader); if the link heals before
// syncLimit the write goes through, and if the follower gives up first
// the client's connection closes and the write never happens.
func TestWorldMinorityWriteWaitsForItsLeader(t *testing.T) {
	for _, tc := range []struct {
		name     string
		heal     time.Duration
		wantErr  bool
		wantNode bool
	}{
		{"healed before syncLimit", 2 * time.Second, false, true},
		{"follower gives up", 20 * time.Second, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := sim.New(21)
				w.UseBubble()
				e := NewOnWorld(w, Config{TickTime: time.Second, SyncLimit: 5})
				var during []string
				var createErr error
				var returned time.Duration
				w.NewHost("c1", nil).Spawn("c1", 0, func(p *sim.Process) {
					var c *zk.Conn
					p.Outside(func() {
						c, _, _ = e.Connect("c1", 0, 10*time.Second, nil)
						_, _, createErr = c.Exists("/") // the session is up
					})
					p.Sleep(500*time.Millisecond - p.TrueNow())
					p.Outside(func() { _, createErr = c.Create("/x", nil, 0, acl) })
					returned = p.TrueNow()
				})
				w.At(200*time.Millisecond, func() { e.Partition("zk1", "zk2"); e.Partition("zk1", "zk3") })
				w.At(time.Second, func() { during = e.Committed("/x") })
				w.At(tc.heal, func() { e.Heal("zk1", "zk2"); e.Heal("zk1", "zk3") })
				if err := w.Run(time.Minute); err != nil {
					t.Fatal(err)
				}
				if len(during) != 0 {
					t.Fatalf("the minority's write committed during the cut: %v", during)
				}
				if (createErr != nil) != tc.wantErr {
					t.Fatalf("create returned %v at %v (want error: %v)", createErr, returned, tc.wantErr)
				}
				if got := len(e.Committed("/x")) == 1; got != tc.wantNode {
					t.Fatalf("/x committed at the end: %v, want %v", got, tc.wantNode)
				}
				if !tc.wantErr && returned < tc.heal {
					t.Fatalf("create returned at %v, before the heal at %v", returned, tc.heal)
				}
			})
		})
	}
}
