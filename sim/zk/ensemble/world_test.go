package ensemble

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim"
)

// hold is one client's time holding the lock, in true time: from Lock's
// return to the call of Unlock.
type hold struct {
	client   string
	from, to time.Duration
}

// lockRun is three go-zookeeper clients taking zk.NewLock("/lock") in turn
// on an ensemble driven by a world, each from a world process.
type lockRun struct {
	w        *sim.World
	e        *Ensemble
	hosts    map[string]*sim.Host
	holds    []hold
	holding  string // the client holding the lock now, "" if none
	lockErrs []string
	err      error
}

type lockSpec struct {
	seed    uint64
	cfg     Config
	rounds  int
	hold    time.Duration
	timeout time.Duration // session timeout
	arm     func(r *lockRun)
	limit   time.Duration // default 10 minutes
}

// runLocks runs spec inside the calling synctest bubble.
func runLocks(spec lockSpec) *lockRun {
	w := sim.New(spec.seed)
	w.UseBubble()
	e := NewOnWorld(w, spec.cfg)
	r := &lockRun{w: w, e: e, hosts: map[string]*sim.Host{}}
	if spec.timeout == 0 {
		spec.timeout = 4 * time.Second
	}
	for i, name := range []string{"c1", "c2", "c3"} {
		i, name := i, name
		h := w.NewHost(name, nil)
		r.hosts[name] = h
		h.Spawn(name, time.Duration(i)*time.Millisecond, func(p *sim.Process) {
			var c *zk.Conn
			connect := func() {
				// The run's end closes the client (Shutdown).
				p.Outside(func() { c, _, _ = e.Connect(name, i, spec.timeout, nil) })
			}
			connect()
			for k := 0; k < spec.rounds; {
				l := zk.NewLock(c, "/lock", acl)
				var err error
				p.Outside(func() { err = l.Lock() })
				if err != nil {
					// go-zookeeper's Lock may leave its node behind
					// when a call fails; closing the session removes it.
					r.lockErrs = append(r.lockErrs, fmt.Sprintf("%v %s: %v", p.TrueNow(), name, err))
					p.Outside(c.Close)
					connect()
					continue
				}
				from := p.TrueNow()
				r.holding = name
				p.Sleep(spec.hold)
				r.holds = append(r.holds, hold{name, from, p.TrueNow()})
				if r.holding == name {
					r.holding = ""
				}
				for tries := 0; ; tries++ {
					p.Outside(func() { err = l.Unlock() })
					if err == nil || errors.Is(err, zk.ErrNoNode) || tries == 50 {
						break
					}
					p.Sleep(100 * time.Millisecond)
				}
				k++
				p.Sleep(10 * time.Millisecond)
			}
			p.Outside(c.Close)
		})
	}
	if spec.arm != nil {
		spec.arm(r)
	}
	if spec.limit == 0 {
		spec.limit = 10 * time.Minute
	}
	r.err = w.Run(spec.limit)
	return r
}

// overlaps lists pairs of holds of different clients that overlap.
func (r *lockRun) overlaps() []string {
	hs := append([]hold(nil), r.holds...)
	sort.Slice(hs, func(i, j int) bool { return hs[i].from < hs[j].from })
	var out []string
	for i := range hs {
		for j := i + 1; j < len(hs) && hs[j].from < hs[i].to; j++ {
			if hs[j].client != hs[i].client {
				out = append(out, fmt.Sprintf("%s [%v, %v] and %s [%v, %v]", hs[i].client, hs[i].from, hs[i].to, hs[j].client, hs[j].from, hs[j].to))
			}
		}
	}
	return out
}

func (r *lockRun) count(client string) int {
	n := 0
	for _, h := range r.holds {
		if h.client == client {
			n++
		}
	}
	return n
}

func (r *lockRun) trace() string {
	var b strings.Builder
	for _, e := range r.w.Trace.Entries {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// check fails the test unless the run ended cleanly and every client took
// the lock rounds times.
func (r *lockRun) check(t *testing.T, rounds int) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		if n := r.count(c); n != rounds {
			t.Fatalf("%s held the lock %d times, want %d (lock errors %v)\n%s", c, n, rounds, r.lockErrs, r.trace())
		}
	}
}

func mustContain(t *testing.T, r *lockRun, want ...string) {
	t.Helper()
	tr := r.trace()
	for _, w := range want {
		if !strings.Contains(tr, w) {
			t.Fatalf("trace lacks %q:\n%s", w, tr)
		}
	}
}

// TestWorldLockTurns: without faults the three clients take the lock in
// turn and no two holds overlap; the trace says what went over the wire.
func TestWorldLockTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := runLocks(lockSpec{seed: 1, rounds: 3, hold: 50 * time.Millisecond})
		r.check(t, 3)
		if o := r.overlaps(); len(o) > 0 {
			t.Fatalf("holds overlap: %v", o)
		}
		if len(r.lockErrs) > 0 {
			t.Fatalf("lock errors without faults: %v", r.lockErrs)
		}
		mustContain(t, r,
			"connect c1#1>zk1", "connect c2#1>zk2", "connect c3#1>zk3",
			"session 0x", "created for c1#1>zk1",
			"recv c1#1>zk1 CREATE /lock/_c_…-lock-",
			"recv c2#1>zk2 GETCHILDREN2 /lock → ok",
			"WATCH NodeDeleted /lock/_c_…-lock-00000000",
			"recv c1#1>zk1 DELETE /lock/_c_…-lock-00000000")
	})
}

// TestWorldLeaderCrash: the leader crashes while a client holds the lock;
// the others elect a new leader, the crashed server's client moves to
// another server with its session, and the lock goes on working.
func TestWorldLeaderCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := runLocks(lockSpec{seed: 2, rounds: 2, hold: 300 * time.Millisecond, arm: crashLeaderAt(500 * time.Millisecond)})
		r.check(t, 2)
		if o := r.overlaps(); len(o) > 0 {
			t.Fatalf("holds overlap: %v", o)
		}
		if got := r.e.Leader(); got != "zk2" || r.e.Stats().Elections != 1 {
			t.Fatalf("leader %q after %d elections, want zk2 after 1", got, r.e.Stats().Elections)
		}
		if !r.w.Net.Down("zk3") {
			t.Fatal("zk3's host is not down on the world's network after its crash")
		}
		mustContain(t, r, "zk3        crash", "leader lost (epoch 1)", "zk2        elected leader (epoch 2",
			"connection c3#1>zk3 reset: zk3 crashed", "connect c3#2>zk1")
	})
}

func crashLeaderAt(at time.Duration) func(r *lockRun) {
	return func(r *lockRun) {
		r.w.At(at, func() { r.e.Crash(r.e.Leader()) })
	}
}

// TestWorldMinorityPartition: the world's network cuts zk1 off from its
// peers; after syncLimit ticks zk1 stops serving and closes its clients'
// connections, c1 resumes its session on another server, and when the cut
// heals zk1 rejoins.
func TestWorldMinorityPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{TickTime: 500 * time.Millisecond, SyncLimit: 2}
		r := runLocks(lockSpec{seed: 3, cfg: cfg, rounds: 3, hold: 400 * time.Millisecond, arm: func(r *lockRun) {
			r.w.At(200*time.Millisecond, func() {
				for _, peer := range []string{"zk2", "zk3"} {
					r.w.Net.Cut("zk1", peer)
					r.w.Net.Cut(peer, "zk1")
				}
			})
			r.w.At(3*time.Second, r.w.Net.HealAll)
		}})
		r.check(t, 3)
		if o := r.overlaps(); len(o) > 0 {
			t.Fatalf("holds overlap: %v", o)
		}
		if r.e.Leader() != "zk3" || r.e.Stats().Elections != 0 {
			t.Fatalf("a minority partition changed the leader: %q, %d elections", r.e.Leader(), r.e.Stats().Elections)
		}
		mustContain(t, r, "link zk1–zk2 cut", "zk1        stops serving", "zk1        closes connection c1#1>zk1",
			"connect c1#2>zk2", "link zk1–zk2 healed")
	})
}

// TestWorldClientPauseExpiresSession: the holder's host pauses
// (Host.Pause) for longer than its session timeout: its pings are held,
// the leader expires the session, its lock node goes, the next client
// takes the lock; the paused one resumes still believing it holds —
// Kleppmann's paused client. The overlap is the expected outcome, and its
// witness is the paused holder and the next one.
func TestWorldClientPauseExpiresSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var paused string
		r := runLocks(lockSpec{seed: 4, rounds: 1, hold: 500 * time.Millisecond, arm: func(r *lockRun) {
			r.w.At(100*time.Millisecond, func() {
				paused = r.holding
				h := r.hosts[paused]
				h.Pause()
				r.w.After(10*time.Second, h.Resume)
			})
		}})
		r.check(t, 1)
		if paused == "" {
			t.Fatal("nobody held the lock at 100ms")
		}
		// The paused hold overlaps both other clients' holds (they took
		// the lock in turn after the expiry); nothing else overlaps.
		o := r.overlaps()
		if len(o) != 2 || !strings.HasPrefix(o[0], paused+" [") || !strings.HasPrefix(o[1], paused+" [") {
			t.Fatalf("overlaps %v, want %s's paused hold against each other client's", o, paused)
		}
		if r.e.Stats().SessionsExpired != 1 {
			t.Fatalf("%d sessions expired, want 1", r.e.Stats().SessionsExpired)
		}
		mustContain(t, r, paused+"         pause", "expired (no contact for", paused+"         resume",
			"CONNECT refused (session expired)")
	})
}

// TestWorldDropResetsConnection: a world filter drops the first ping reply
// to c2; as with a lost TCP segment the connection resets, c2 reconnects
// with its session, re-registers its watch, and the lock still works.
func TestWorldDropResetsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []string
		r := runLocks(lockSpec{seed: 5, rounds: 2, hold: 3 * time.Second, arm: func(r *lockRun) {
			dropped := false
			r.w.Net.AddFilter(func(m *sim.Message) (bool, time.Duration, string) {
				if !dropped && m.Client == "c2" && m.Op == "PING" && m.Dir == sim.Reply {
					dropped = true
					return true, 0, "test: c2's first ping reply"
				}
				return false, 0, ""
			})
			r.w.Net.Observe(func(m *sim.Message) {
				if m.Client == "c2" && m.Op == "SETWATCHES" {
					seen = append(seen, string(m.Dir))
				}
			})
		}})
		r.check(t, 2)
		if o := r.overlaps(); len(o) > 0 {
			t.Fatalf("holds overlap: %v", o)
		}
		if len(r.lockErrs) > 0 {
			t.Fatalf("a reset while waiting for the lock failed Lock: %v", r.lockErrs)
		}
		if strings.Join(seen, ",") != "request,reply" {
			t.Fatalf("observers saw c2's SETWATCHES %v, want its request and reply", seen)
		}
		mustContain(t, r, "dropped reply zk2→c2 PING → ok (test: c2's first ping reply)",
			"connection c2#1>zk2 reset: reply PING → ok lost (test: c2's first ping reply)", "connect c2#2>")
	})
}

// TestWorldDeterministic: one seed gives one trace, byte for byte, at
// GOMAXPROCS 1 and 4: with a leader crash, and with a fault schedule
// (pause, partition, delay, drop) armed by faults.Arm.
func TestWorldDeterministic(t *testing.T) {
	specs := map[string]func() lockSpec{
		"leader crash": func() lockSpec {
			return lockSpec{seed: 7, rounds: 2, hold: 200 * time.Millisecond, arm: crashLeaderAt(300 * time.Millisecond)}
		},
		"fault schedule": func() lockSpec {
			return lockSpec{seed: 8, cfg: Config{TickTime: 500 * time.Millisecond, SyncLimit: 2}, rounds: 2, hold: 2 * time.Second, arm: func(r *lockRun) {
				faults.Arm(r.w, targets(r), scheduleOfEverything(), nil)
			}}
		},
	}
	for _, name := range []string{"leader crash", "fault schedule"} {
		t.Run(name, func(t *testing.T) {
			var shas []string
			var lines []int
			for _, procs := range []int{1, 4, 1, 4} {
				old := runtime.GOMAXPROCS(procs)
				synctest.Test(t, func(t *testing.T) {
					r := runLocks(specs[name]())
					r.check(t, 2)
					shas = append(shas, r.w.Trace.SHA256())
					lines = append(lines, r.w.Trace.Len())
				})
				runtime.GOMAXPROCS(old)
			}
			for i := range shas {
				if shas[i] != shas[0] {
					t.Fatalf("trace digests differ: %v (%v lines)", shas, lines)
				}
			}
		})
	}
}

// TestWorldRunEndsWhileWaiting: the run's limit falls while clients hold
// or wait for the lock inside go-zookeeper's Lock; the run's end resets
// the ensemble's connections and closes the clients, Lock returns, and
// every goroutine of the bubble ends (synctest.Test would report any
// left). Afterwards a write fails and a dial is refused at once, without
// the kernel.
func TestWorldRunEndsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := runLocks(lockSpec{seed: 9, rounds: 2, hold: 5 * time.Second, limit: 2 * time.Second})
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.holds) != 0 {
			t.Fatalf("holds %v ended within 2s of 5s holds", r.holds)
		}
		conn, err := r.e.Dialer("c9")("tcp", "zk1:2181", time.Second)
		if err == nil || !strings.Contains(err.Error(), "ensemble stopped") {
			t.Fatalf("dial after the run: %v, %v; want refused: ensemble stopped", conn, err)
		}
		r.e.mu.Lock()
		c := r.e.conns[0]
		r.e.mu.Unlock()
		// Reset by the run's end, then closed by its client.
		if _, err := c.Write([]byte{0, 0, 0, 0}); !errors.Is(err, errReset) && !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after the run: %v, want %v or %v", err, errReset, net.ErrClosed)
		}
	})
}

// TestWorldClientServerPartition: the world cuts c1 from its server; its
// frames are held, go-zookeeper's read timeout gives up on the connection,
// and c1 resumes its session on another server; the lock goes on.
func TestWorldClientServerPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := runLocks(lockSpec{seed: 10, rounds: 2, hold: 2 * time.Second, arm: func(r *lockRun) {
			r.w.At(100*time.Millisecond, func() {
				r.w.Net.Cut("c1", "zk1")
				r.w.Net.Cut("zk1", "c1")
			})
			r.w.At(5*time.Second, r.w.Net.HealAll)
		}})
		r.check(t, 2)
		if o := r.overlaps(); len(o) > 0 {
			t.Fatalf("holds overlap: %v", o)
		}
		if r.e.Stats().SessionsExpired != 0 {
			t.Fatalf("%d sessions expired, want none (c1 moved in time)", r.e.Stats().SessionsExpired)
		}
		mustContain(t, r, "link c1–zk1 cut", "c1#1>zk1 held (link cut or host paused): PING", "connect c1#2>zk2", "link c1–zk1 healed")
	})
}

// A client closed through Ensemble.Close leaves the ensemble's clients, so
// the run's end (Shutdown) does not close it a second time; a client still
// open at the end is closed there, and the bubble ends with no goroutine
// of either left.
func TestWorldCloseForgetsTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := sim.New(1)
		w.UseBubble()
		e := NewOnWorld(w, Config{})
		var a, b *zk.Conn
		var afterClose []*zk.Conn
		var errA error
		w.NewHost("c2", nil)
		w.NewHost("c1", nil).Spawn("c1", 0, func(p *sim.Process) {
			p.Outside(func() {
				a, _, _ = e.Connect("c1", 0, 4*time.Second, nil)
				b, _, _ = e.Connect("c2", 1, 4*time.Second, nil)
				a.Exists("/")
				b.Exists("/")
				e.Close(a)
				e.Close(a) // not the ensemble's any more: nothing happens
				_, _, errA = a.Exists("/")
			})
			e.mu.Lock()
			afterClose = append(afterClose, e.clients...)
			e.mu.Unlock()
		})
		if err := w.Run(time.Minute); err != nil {
			t.Fatal(err)
		}
		if len(afterClose) != 1 || afterClose[0] != b {
			t.Fatalf("clients after closing a: %v; want only b (%p)", afterClose, b)
		}
		if !errors.Is(errA, zk.ErrClosing) && !errors.Is(errA, zk.ErrConnectionClosed) {
			t.Fatalf("a request on the closed client: %v", errA)
		}
		e.mu.Lock()
		left := len(e.clients)
		e.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d clients left after the run's end", left)
		}
	})
}
