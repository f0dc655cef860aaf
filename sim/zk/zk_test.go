package zk

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/sim"
)

// rig is an ensemble and a few clients on a network with a fixed 1 ms
// latency and no jitter, so every instant below can be computed by hand:
// the heartbeat sends CONNECT at 0, the server makes the session at 1 ms,
// the client is CONNECTED at 2 ms.
type rig struct {
	t      *testing.T
	w      *sim.World
	srv    *Server
	hosts  map[string]*sim.Host
	conns  map[string]*Conn
	states map[string][]string
}

const ms = time.Millisecond

func newRig(t *testing.T, opt Options, clients ...string) *rig {
	t.Helper()
	w := sim.New(1)
	w.Net.Latency, w.Net.Jitter = ms, 0
	r := &rig{t: t, w: w, srv: NewServer(w, "", nil), hosts: map[string]*sim.Host{}, conns: map[string]*Conn{}, states: map[string][]string{}}
	for _, name := range clients {
		h := w.NewHost(name, nil)
		c := r.srv.Connect(h, opt)
		name := name
		c.AddListener(func(s State) { r.states[name] = append(r.states[name], fmt.Sprintf("%s@%v", s, w.Now())) })
		r.hosts[name], r.conns[name] = h, c
	}
	return r
}

// do runs fn as the main process of client name, starting at start.
func (r *rig) do(name string, start time.Duration, fn func(p *sim.Process, c *Conn)) {
	c := r.conns[name]
	r.hosts[name].Spawn(name, start, func(p *sim.Process) { fn(p, c) })
}

// run runs the world until limit: a process on a host of its own keeps it
// going (the connections' processes are background ones).
func (r *rig) run(limit time.Duration) {
	r.t.Helper()
	r.w.NewHost("clock", nil).Spawn("clock", 0, func(p *sim.Process) { p.Sleep(limit) })
	if err := r.w.Run(limit); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) wantStates(name string, want ...string) {
	r.t.Helper()
	if got := r.states[name]; !slices.Equal(got, want) {
		r.t.Fatalf("%s's states: %q, want %q", name, got, want)
	}
}

func create(t *testing.T, c *Conn, path string, data []byte, flags int32) string {
	t.Helper()
	p, err := c.Create(path, data, flags)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func set(t *testing.T, c *Conn, path string, data []byte, version int32) {
	t.Helper()
	if _, err := c.Set(path, data, version); err != nil {
		t.Fatal(err)
	}
}

func TestRequestWaitsForTheSession(t *testing.T) {
	r := newRig(t, Options{}, "c1")
	var at time.Duration
	r.do("c1", 0, func(p *sim.Process, c *Conn) {
		create(t, c, "/a", nil, 0)
		at = p.TrueNow()
	})
	r.run(time.Second)
	// Session at 2 ms, then one round trip.
	if at != 4*ms {
		t.Fatalf("create returned at %v, want 4ms", at)
	}
	r.wantStates("c1", "CONNECTED@2ms")
}

func TestSequentialNamesFollowTheParentsCversion(t *testing.T) {
	r := newRig(t, Options{}, "c1")
	var names []string
	r.do("c1", 0, func(p *sim.Process, c *Conn) {
		create(t, c, "/locks", nil, 0)
		create(t, c, "/other", nil, 0)
		for i := 0; i < 3; i++ {
			names = append(names, create(t, c, "/locks/lock-", nil, FlagEphemeral|FlagSequence))
		}
		if err := c.Delete(names[1], -1); err != nil {
			t.Error(err)
		}
		// The delete moved the child version on: the next suffix skips 3.
		names = append(names, create(t, c, "/locks/lock-", nil, FlagEphemeral|FlagSequence))
		// Another parent counts on its own; persistent sequential works too.
		names = append(names, create(t, c, "/other/x-", []byte("v"), FlagSequence))
		if _, err := c.Create("/locks/lock-0000000000", nil, 0); !errors.Is(err, ErrNodeExists) {
			t.Errorf("creating an existing node: %v, want ErrNodeExists", err)
		}
		if _, err := c.Create("/missing/x", nil, 0); !errors.Is(err, ErrNoNode) {
			t.Errorf("creating under a missing parent: %v, want ErrNoNode", err)
		}
		if _, err := c.Create(names[0]+"/child", nil, 0); !errors.Is(err, ErrNoChildrenForEphemerals) {
			t.Errorf("child of an ephemeral: %v, want ErrNoChildrenForEphemerals", err)
		}
		if err := c.Delete("/locks", -1); !errors.Is(err, ErrNotEmpty) {
			t.Errorf("deleting a parent: %v, want ErrNotEmpty", err)
		}
		if err := c.Delete(names[0], 7); !errors.Is(err, ErrBadVersion) {
			t.Errorf("deleting with a wrong version: %v, want ErrBadVersion", err)
		}
		children, _, err := c.Children("/locks")
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"lock-0000000000", "lock-0000000002", "lock-0000000004"}; !slices.Equal(children, want) {
			t.Errorf("children %q, want %q", children, want)
		}
	})
	r.run(time.Second)
	want := []string{"/locks/lock-0000000000", "/locks/lock-0000000001", "/locks/lock-0000000002", "/locks/lock-0000000004", "/other/x-0000000000"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	for i, n := range []string{"/locks/lock-0000000000", "/locks/lock-0000000002", "/locks/lock-0000000004"} {
		_, st, ok := r.srv.Node(n)
		if !ok || st.EphemeralOwner != r.conns["c1"].SessionID() {
			t.Fatalf("%s: exists %v, stat %+v", n, ok, st)
		}
		if seq, _ := Sequence(n); seq != []int64{0, 2, 4}[i] {
			t.Fatalf("Sequence(%s) = %d", n, seq)
		}
	}
	_, a, _ := r.srv.Node("/locks/lock-0000000002")
	_, b, _ := r.srv.Node("/locks/lock-0000000004")
	if a.Czxid >= b.Czxid {
		t.Fatalf("czxid of a later node not higher: %d then %d", a.Czxid, b.Czxid)
	}
	if _, ok := Sequence("lock-00000000x1"); ok {
		t.Fatalf("Sequence parsed a non-number")
	}
}

func TestWatchesAreOneShotAndCountedOncePerSession(t *testing.T) {
	r := newRig(t, Options{}, "c1", "c2")
	notes := func() int64 { return r.srv.Notifications }
	var got []string
	r.do("c1", 0, func(p *sim.Process, c *Conn) {
		// An exists watch on a missing node fires when it is created.
		ok, _, wt, err := c.ExistsW("/n")
		if err != nil || ok {
			t.Fatalf("ExistsW: %v %v", ok, err)
		}
		ev, _ := wt.Wait(NoTimeout)
		got = append(got, ev.String())

		// Two watches of the same session on the same node: one
		// notification, both watches fire.
		w1 := getW(t, c, "/n")
		w2 := existsW(t, c, "/n")
		ev1, _ := w1.Wait(NoTimeout)
		ev2, _ := w2.Wait(NoTimeout)
		got = append(got, ev1.String(), ev2.String())
		if n := notes(); n != 2 {
			t.Errorf("after two watches on one change: %d notifications, want 2", n)
		}

		// A fired watch is gone: the second change notifies nobody.
		p.Sleep(100 * ms)
		if n := notes(); n != 2 {
			t.Errorf("after a second change: %d notifications, want 2", n)
		}

		// A data watch and a child watch of one session on a node that is
		// deleted: one notification.
		cw := childrenW(t, c, "/n")
		dw := getW(t, c, "/n")
		e1, _ := cw.Wait(NoTimeout)
		e2, _ := dw.Wait(NoTimeout)
		got = append(got, e1.String(), e2.String())
		if n := notes(); n != 3 {
			t.Errorf("after delete: %d notifications, want 3", n)
		}

		// GetW on a missing node leaves no watch.
		if _, _, _, err := c.GetW("/n"); !errors.Is(err, ErrNoNode) {
			t.Errorf("GetW on a missing node: %v", err)
		}
		// A watch that never fires times out.
		if _, ok := existsW(t, c, "/quiet").Wait(300 * ms); ok {
			t.Errorf("a watch on a quiet node fired")
		}
	})
	r.do("c2", 50*ms, func(p *sim.Process, c *Conn) {
		create(t, c, "/n", nil, 0)
		p.Sleep(100 * ms)
		set(t, c, "/n", []byte("1"), -1)
		p.Sleep(50 * ms)
		set(t, c, "/n", []byte("2"), -1)
		p.Sleep(100 * ms)
		if err := c.Delete("/n", -1); err != nil {
			t.Error(err)
		}
		p.Sleep(100 * ms)
		create(t, c, "/n", nil, 0) // nobody watches any more
	})
	r.run(2 * time.Second)
	want := []string{"NodeCreated /n", "NodeDataChanged /n", "NodeDataChanged /n", "NodeDeleted /n", "NodeDeleted /n"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if n := notes(); n != 3 {
		t.Fatalf("%d notifications in all, want 3", n)
	}
}

func getW(t *testing.T, c *Conn, path string) *Watch {
	t.Helper()
	_, _, wt, err := c.GetW(path)
	if err != nil {
		t.Fatal(err)
	}
	return wt
}

func existsW(t *testing.T, c *Conn, path string) *Watch {
	t.Helper()
	_, _, wt, err := c.ExistsW(path)
	if err != nil {
		t.Fatal(err)
	}
	return wt
}

func childrenW(t *testing.T, c *Conn, path string) *Watch {
	t.Helper()
	_, _, wt, err := c.ChildrenW(path)
	if err != nil {
		t.Fatal(err)
	}
	return wt
}

func TestPausedClientsSessionExpiresAndItsEphemeralsGo(t *testing.T) {
	r := newRig(t, Options{SessionTimeout: 6 * time.Second}, "c1")
	r.do("c1", 0, func(p *sim.Process, c *Conn) {
		create(t, c, "/e", nil, FlagEphemeral) // arrives 3 ms
		create(t, c, "/p", nil, 0)             // arrives 5 ms: the last contact
		p.Sleep(20 * time.Second)
	})
	r.w.At(time.Second, r.hosts["c1"].Pause)
	r.w.At(11*time.Second, r.hosts["c1"].Resume)
	exists := map[time.Duration]bool{}
	for _, at := range []time.Duration{6*time.Second + 4*ms, 6*time.Second + 6*ms} {
		at := at
		r.w.At(at, func() { _, _, exists[at] = r.srv.Node("/e") })
	}
	r.run(15 * time.Second)
	if !exists[6*time.Second+4*ms] || exists[6*time.Second+6*ms] {
		t.Fatalf("ephemeral node: %v; want it gone exactly 6s after the last contact (5ms)", exists)
	}
	if _, _, ok := r.srv.Node("/p"); !ok {
		t.Fatalf("the persistent node went with the session")
	}
	if r.srv.SessionsExpired != 1 {
		t.Fatalf("SessionsExpired = %d", r.srv.SessionsExpired)
	}
	// On resume the client notices the silence (SUSPENDED), its ping hears
	// that the session expired (LOST), and a new session follows.
	r.wantStates("c1", "CONNECTED@2ms", "SUSPENDED@11s", "LOST@11.002s", "RECONNECTED@11.004s")
}

func TestStatesWhenCutOff(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lostAfter time.Duration
		want      []string
	}{
		// Last contact: the CONNECT reply at 2 ms (the server heard the
		// CONNECT at 1 ms). SUSPENDED 4 s later, the server expires the
		// session at 6.001 s, LOST one session timeout after SUSPENDED,
		// and after the heal at 20 s the next connect attempt (every 6 s
		// from LOST) makes a new session.
		{"curator-default", 0, []string{"CONNECTED@2ms", "SUSPENDED@4.002s", "LOST@10.002s", "RECONNECTED@22.004s"}},
		{"lost-after-2s", 2 * time.Second, []string{"CONNECTED@2ms", "SUSPENDED@4.002s", "LOST@6.002s", "RECONNECTED@24.004s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Options{SessionTimeout: 6 * time.Second, LostAfter: tc.lostAfter}, "c1")
			var expiredAt time.Duration
			r.w.At(time.Second, func() { r.w.Net.Cut("c1", "zk"); r.w.Net.Cut("zk", "c1") })
			r.w.At(20*time.Second, r.w.Net.HealAll)
			for at := 5 * time.Second; at < 7*time.Second; at += ms {
				at := at
				r.w.At(at, func() {
					if expiredAt == 0 && !r.srv.Alive(1) {
						expiredAt = at
					}
				})
			}
			r.run(30 * time.Second)
			r.wantStates("c1", tc.want...)
			if expiredAt != 6*time.Second+2*ms {
				t.Fatalf("session first seen expired at %v, want 6.002s (expired at 6.001s)", expiredAt)
			}
			if id := r.conns["c1"].SessionID(); id != 2 {
				t.Fatalf("session after reconnecting: %d, want 2", id)
			}
		})
	}
}

func TestShortPartitionReconnectsTheSameSessionAndReplaysMissedEvents(t *testing.T) {
	r := newRig(t, Options{SessionTimeout: 6 * time.Second}, "c1", "c2")
	var ev Event
	var evAt time.Duration
	r.do("c2", 0, func(p *sim.Process, c *Conn) {
		create(t, c, "/n", nil, FlagEphemeral)
		p.Sleep(1500 * ms)
		if err := c.Delete("/n", -1); err != nil { // c1 is cut off: its notification is lost
			t.Error(err)
		}
	})
	r.do("c1", 10*ms, func(p *sim.Process, c *Conn) {
		wt := getW(t, c, "/n")
		ev, _ = wt.Wait(NoTimeout)
		evAt = p.TrueNow()
	})
	r.w.At(time.Second, func() { r.w.Net.Cut("c1", "zk"); r.w.Net.Cut("zk", "c1") })
	r.w.At(3*time.Second, r.w.Net.HealAll)
	r.run(10 * time.Second)
	if ev.Type != EventNodeDeleted || ev.Path != "/n" {
		t.Fatalf("c1's watch: %v", ev)
	}
	// c1 last heard at 12 ms (GETDATA reply): SUSPENDED at 4.012 s, its ping
	// is answered at 4.014 s (RECONNECTED), SETWATCHES finds /n gone and
	// the notification arrives at 4.016 s.
	r.wantStates("c1", "CONNECTED@2ms", "SUSPENDED@4.012s", "RECONNECTED@4.014s")
	if evAt != 4*time.Second+16*ms {
		t.Fatalf("event delivered at %v, want 4.016s", evAt)
	}
	if r.srv.SessionsExpired != 0 || r.conns["c1"].SessionID() != 1 {
		t.Fatalf("c1's session did not survive: expired %d, id %d", r.srv.SessionsExpired, r.conns["c1"].SessionID())
	}
	if r.srv.Notifications != 2 {
		t.Fatalf("%d notifications, want 2 (lost, then replayed)", r.srv.Notifications)
	}
}

func TestExpiryEndsWatchesWithNotWatching(t *testing.T) {
	r := newRig(t, Options{SessionTimeout: 3 * time.Second}, "c1", "c2")
	var ev Event
	r.do("c2", 0, func(p *sim.Process, c *Conn) { create(t, c, "/n", nil, 0) })
	r.do("c1", 10*ms, func(p *sim.Process, c *Conn) {
		wt := getW(t, c, "/n")
		ev, _ = wt.Wait(NoTimeout)
	})
	r.w.At(time.Second, func() { r.w.Net.Cut("c1", "zk"); r.w.Net.Cut("zk", "c1") })
	r.run(10 * time.Second)
	if ev.Type != EventNotWatching || !errors.Is(ev.Err, ErrSessionExpired) {
		t.Fatalf("watch ended with %v, want NotWatching (session expired)", ev)
	}
}

func TestServerClockJumpsDoNotExpireSessions(t *testing.T) {
	r := newRig(t, Options{SessionTimeout: 6 * time.Second}, "c1")
	r.w.At(time.Second, func() { r.srv.Host.Clock.Jump(r.w.Now(), time.Hour) })
	r.w.At(2*time.Second, func() { r.hosts["c1"].Clock.Jump(r.w.Now(), -time.Hour) })
	r.do("c1", 0, func(p *sim.Process, c *Conn) {
		create(t, c, "/e", nil, FlagEphemeral)
		p.Sleep(30 * time.Second)
	})
	r.run(30 * time.Second)
	if r.srv.SessionsExpired != 0 {
		t.Fatalf("a wall-clock jump expired a session")
	}
	r.wantStates("c1", "CONNECTED@2ms")
}

func TestServerDriftStretchesTheSessionTimeout(t *testing.T) {
	w := sim.New(1)
	w.Net.Latency, w.Net.Jitter = ms, 0
	// The server's oscillator runs 50% fast: 6 s of its time pass in 4 s.
	srv := NewServer(w, "", sim.NewClock(0, 500_000))
	h := w.NewHost("c1", nil)
	srv.Connect(h, Options{SessionTimeout: 6 * time.Second})
	w.At(500*ms, h.Pause)
	w.NewHost("clock", nil).Spawn("clock", 0, func(p *sim.Process) { p.Sleep(10 * time.Second) })
	var expired time.Duration
	for at := time.Second; at < 8*time.Second; at += ms {
		at := at
		w.At(at, func() {
			if expired == 0 && !srv.Alive(1) {
				expired = at
			}
		})
	}
	if err := w.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if expired != 4*time.Second+2*ms {
		t.Fatalf("expired seen at %v, want 4.002s (touched at 1ms, 4s of true time)", expired)
	}
}

func TestCloseDeletesEphemeralsAtOnce(t *testing.T) {
	r := newRig(t, Options{}, "c1", "c2")
	var ev Event
	r.do("c1", 0, func(p *sim.Process, c *Conn) {
		create(t, c, "/e", nil, FlagEphemeral)
		p.Sleep(100 * ms)
		c.Close()
		if _, err := c.Create("/x", nil, 0); !errors.Is(err, ErrClosing) {
			t.Errorf("request after Close: %v", err)
		}
	})
	r.do("c2", 20*ms, func(p *sim.Process, c *Conn) {
		wt := existsW(t, c, "/e")
		ev, _ = wt.Wait(NoTimeout)
	})
	r.run(time.Second)
	if ev.Type != EventNodeDeleted {
		t.Fatalf("c2 saw %v", ev)
	}
	if r.srv.SessionsExpired != 0 || r.srv.Alive(1) {
		t.Fatalf("close: expired %d, alive %v", r.srv.SessionsExpired, r.srv.Alive(1))
	}
	r.wantStates("c1", "CONNECTED@2ms", "CLOSED@106ms") // CLOSE sent at 104ms, answered at 106ms
}

func TestOrphansAreEphemeralsTheirOwnerNeverLearnedOf(t *testing.T) {
	r := newRig(t, Options{SessionTimeout: 6 * time.Second}, "c1")
	dropped := false
	r.w.Net.AddFilter(func(m *sim.Message) (bool, time.Duration, string) {
		if m.Dir == sim.Reply && m.Op == "CREATE" && !dropped {
			dropped = true
			return true, 0, "test"
		}
		return false, 0, ""
	})
	var err error
	r.do("c1", 0, func(p *sim.Process, c *Conn) {
		_, err = c.Create("/q-", nil, FlagEphemeral|FlagSequence)
		create(t, c, "/q-", nil, FlagEphemeral|FlagSequence)
	})
	r.run(10 * time.Second)
	if !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("create with a lost reply: %v, want ErrConnectionLoss", err)
	}
	if got := r.srv.Orphans(); !slices.Equal(got, []string{"/q-0000000000"}) {
		t.Fatalf("orphans %q", got)
	}
}

func TestEveryRequestIsAMessageWithAnUpperCaseOp(t *testing.T) {
	r := newRig(t, Options{}, "c1")
	ops := map[string]bool{}
	r.w.Net.Observe(func(m *sim.Message) { ops[m.Op] = true })
	r.do("c1", 0, func(p *sim.Process, c *Conn) {
		create(t, c, "/a", nil, 0)
		childrenW(t, c, "/a")
		create(t, c, "/a/b", nil, 0)
		c.Exists("/a")
		c.Get("/a")
		c.Delete("/a/b", -1)
		p.Sleep(3 * time.Second)
	})
	r.run(3 * time.Second)
	var got []string
	for _, op := range []string{"CONNECT", "CREATE", "DELETE", "CHILDREN", "EXISTS", "GETDATA", "PING", "WATCH"} {
		if ops[op] {
			got = append(got, op)
		}
	}
	if len(got) != 8 {
		t.Fatalf("ops seen: %v", strings.Join(got, " "))
	}
}

func TestSameSeedSameTrace(t *testing.T) {
	run := func() string {
		w := sim.New(7)
		srv := NewServer(w, "", nil)
		for i := 1; i <= 4; i++ {
			h := w.NewHost(fmt.Sprintf("c%d", i), nil)
			c := srv.Connect(h, Options{})
			h.Spawn(h.Name, 0, func(p *sim.Process) {
				for {
					_, err := c.Create("/lock", nil, FlagEphemeral)
					if err == nil {
						break
					}
					ok, _, wt, err := c.ExistsW("/lock")
					if err == nil && ok {
						wt.Wait(NoTimeout)
					}
				}
				p.Sleep(time.Duration(p.Rand().Int64N(int64(50 * ms))))
				c.Delete("/lock", -1)
			})
		}
		if err := w.Run(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		if srv.Notifications != 3+2+1 {
			t.Fatalf("%d notifications, want 6", srv.Notifications)
		}
		return w.Trace.SHA256()
	}
	if a, b := run(), run(); a != b {
		t.Fatalf("same seed, different traces")
	}
}
