package dbnet_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/dbnet"
	"github.com/locklab/locklab/sim/event"
	"github.com/locklab/locklab/sim/pgnode"
)

// pgWorld is a world with one simulated Postgres server, db1, on the
// simulated network, and what its clients did.
type pgWorld struct {
	w     *sim.World
	net   *dbnet.Net
	holds []string // "c1 from 0.01s"
}

func newPgWorld(seed uint64, ka dbnet.Keepalive) *pgWorld {
	w := sim.New(seed)
	w.UseBubble()
	n := dbnet.New(w, func() dbnet.Codec { return pgnode.NewCodec() })
	n.AddServer("db1", ka, func(dbnet.Service) dbnet.Service { return pgnode.NewServer() })
	return &pgWorld{w: w, net: n}
}

// connect opens an unmodified pgx connection from p's host to db1.
func (pw *pgWorld) connect(p *sim.Process) *pgx.Conn {
	cfg, err := pgx.ParseConfig("postgres://" + p.Host.Name + "@db1:5432/lab?sslmode=disable")
	if err != nil {
		panic(err)
	}
	cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) { return []string{host}, nil }
	cfg.DialFunc = pw.net.DialFunc(p.Host)
	var c *pgx.Conn
	p.Outside(func() { c, err = pgx.ConnectConfig(context.Background(), cfg) })
	if err != nil {
		panic(fmt.Sprintf("%s: connect: %v", p.Name, err))
	}
	return c
}

// tryLock polls pg_try_advisory_lock every second until it gets the lock
// or the connection fails.
func (pw *pgWorld) tryLock(p *sim.Process, c *pgx.Conn, key int64) bool {
	for {
		var ok bool
		var err error
		p.Outside(func() { err = c.QueryRow(context.Background(), "SELECT pg_try_advisory_lock($1)", key).Scan(&ok) })
		if err != nil {
			return false
		}
		if ok {
			pw.holds = append(pw.holds, fmt.Sprintf("%s from %v", p.Name, p.TrueNow()))
			return true
		}
		p.Sleep(time.Second)
	}
}

func kinds(evs []event.Event, k event.Kind) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// runPartition: c1 takes lock 1 and keeps it; at 1 s c1 is cut off from
// db1 (or paused, or nothing happens); c2 polls for the lock.
func runPartition(t *testing.T, seed uint64, fault string) *pgWorld {
	pw := newPgWorld(seed, dbnet.Keepalive{Idle: 5 * time.Second, Interval: time.Second, Count: 3})
	w := pw.w
	c1, c2 := w.NewHost("c1", nil), w.NewHost("c2", nil)
	c1.Spawn("c1", 0, func(p *sim.Process) {
		c := pw.connect(p)
		pw.tryLock(p, c, 1)
		p.Sleep(time.Minute) // holds, and believes it holds
	})
	c2.Spawn("c2", 100*time.Millisecond, func(p *sim.Process) {
		c := pw.connect(p)
		pw.tryLock(p, c, 1)
	})
	w.At(time.Second, func() {
		switch fault {
		case "partition":
			w.Net.Cut("c1", "db1")
			w.Net.Cut("db1", "c1")
		case "pause":
			c1.Pause()
			w.After(20*time.Second, c1.Resume)
		}
	})
	w.Trace.Keep = true
	if err := w.Run(40 * time.Second); err != nil {
		t.Fatal(err)
	}
	return pw
}

// A partition cuts the lock holder off: db1 hears nothing from c1, its
// keepalive probes after 5 s of silence, gives up after 3 unanswered
// probes a second apart, and ends c1's session — releasing the lock,
// which c2 then takes while c1 still believes it holds it.
func TestKeepaliveEndsPartitionedSessionAndFreesItsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pw := runPartition(t, 1, "partition")
		evs := pw.w.Trace.Events
		if len(pw.holds) != 2 || !strings.HasPrefix(pw.holds[0], "c1 ") || !strings.HasPrefix(pw.holds[1], "c2 ") {
			t.Fatalf("holds %v, want c1 then c2", pw.holds)
		}
		ended := kinds(evs, event.DBSessionEnded)
		if len(ended) != 1 || ended[0].Client != "c1" || !strings.Contains(ended[0].Reason, "keepalive: 3 probes unanswered") {
			t.Fatalf("sessions ended: %+v, want c1's by keepalive", ended)
		}
		// Silence since c1's grant (it then only sleeps), first probe 5 s
		// later, two more a second apart, dead a second after the third:
		// about 8 s.
		if ended[0].At < 7*time.Second || ended[0].At > 9*time.Second {
			t.Fatalf("session ended at %v, want about 8 s (idle 5 s + 3 probes 1 s apart after the cut)", ended[0].At)
		}
		var c2From time.Duration
		fmt.Sscanf(strings.TrimPrefix(pw.holds[1], "c2 from "), "%v", &c2From)
		granted := kinds(evs, event.DBLockGranted)
		if len(granted) != 2 || granted[1].Client != "c2" || granted[1].At < ended[0].At {
			t.Fatalf("grants %+v, want c2's after c1's session ended at %v", granted, ended[0].At)
		}
		if n := len(kinds(evs, event.DBKeepaliveFailed)); n != 3 {
			t.Fatalf("%d failed probes, want 3", n)
		}
	})
}

// A paused client process keeps its session: its host's TCP stack
// answers the probes, so db1 keeps the lock for it and c2 never gets it.
func TestPausedClientKeepsItsSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pw := runPartition(t, 1, "pause")
		if len(pw.holds) != 1 {
			t.Fatalf("holds %v, want c1's only", pw.holds)
		}
		if ended := kinds(pw.w.Trace.Events, event.DBSessionEnded); len(ended) != 0 {
			t.Fatalf("sessions ended %+v, want none", ended)
		}
	})
}

// One seed, one trace: the same run at GOMAXPROCS 1 and 4 gives the same
// digest (and -race runs the same test).
func TestDBNetTraceIsDeterministic(t *testing.T) {
	digest := func(procs int) string {
		prev := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(prev)
		var sum string
		synctest.Test(t, func(t *testing.T) { sum = runPartition(t, 7, "partition").w.Trace.SHA256() })
		return sum
	}
	a, b, c := digest(1), digest(4), digest(4)
	if a != b || b != c {
		t.Fatalf("digests differ: %s %s %s", a, b, c)
	}
}

// A lost segment resets the connection when it would have arrived (TCP
// gives up on it): the dropped unlock never runs, but the reset ends c1's
// backend, and its session lock with it; c2 then gets the lock.
func TestDroppedSegmentResetsTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pw := newPgWorld(1, dbnet.Keepalive{})
		w := pw.w
		w.Net.AddFilter(func(m *sim.Message) (bool, time.Duration, string) {
			return m.Op == "pg_advisory_unlock" && m.Dir == sim.Request, 0, "test drop"
		})
		var unlockErr error
		w.NewHost("c1", nil).Spawn("c1", 0, func(p *sim.Process) {
			c := pw.connect(p)
			pw.tryLock(p, c, 1)
			p.Sleep(time.Second)
			p.Outside(func() { _, unlockErr = c.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", int64(1)) })
		})
		w.NewHost("c2", nil).Spawn("c2", 100*time.Millisecond, func(p *sim.Process) {
			pw.tryLock(p, pw.connect(p), 1)
		})
		w.Trace.Keep = true
		if err := w.Run(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		if unlockErr == nil {
			t.Fatal("the unlock whose segment was lost returned no error")
		}
		resets := kinds(w.Trace.Events, event.DBConnReset)
		if len(resets) != 2 || resets[0].Conn != "c1#1>db1" || !strings.Contains(resets[0].Reason, "pg_advisory_unlock(1) lost (test drop)") {
			t.Fatalf("resets %+v, want c1's connection reset on both sides", resets)
		}
		if len(pw.holds) != 2 || !strings.HasPrefix(pw.holds[1], "c2 ") {
			t.Fatalf("holds %v, want c2 after c1's session ended", pw.holds)
		}
		if n := len(kinds(w.Trace.Events, event.DBLockReleased)); n != 0 {
			t.Fatalf("%d unlocks ran; the lost one must not", n)
		}
	})
}

// A crashed server refuses dials until it restarts, resets its
// connections, and comes back with an empty lock table; a standby
// promoted in its place answers for its address.
func TestServerCrashRestartAndPromotion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pw := newPgWorld(1, dbnet.Keepalive{})
		w, n := pw.w, pw.net
		n.AddServer("db2", dbnet.Keepalive{}, func(dbnet.Service) dbnet.Service { return pgnode.NewServer() })
		var dialErr error
		var c1Err error
		w.NewHost("c1", nil).Spawn("c1", 0, func(p *sim.Process) {
			c := pw.connect(p)
			pw.tryLock(p, c, 1)
			p.Sleep(2 * time.Second)
			var ok bool
			p.Outside(func() {
				c1Err = c.QueryRow(context.Background(), "SELECT pg_try_advisory_lock($1)", int64(1)).Scan(&ok)
			})
		})
		w.NewHost("c2", nil).Spawn("c2", 1500*time.Millisecond, func(p *sim.Process) {
			p.Outside(func() { _, dialErr = n.Dial(p.Host, "db1") })
			p.Sleep(time.Second) // db1 restarts at 2 s
			pw.tryLock(p, pw.connect(p), 1)
			p.Sleep(2 * time.Second) // past the promotion at 3 s
		})
		w.At(time.Second, func() { n.Crash("db1") })
		w.At(2*time.Second, func() { n.Restart("db1") })
		w.At(3*time.Second, func() { n.Promote("db1", "db2") })
		w.Trace.Keep = true
		if err := w.Run(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		if dialErr == nil || !strings.Contains(dialErr.Error(), "connection refused (db1 is down)") {
			t.Fatalf("dial during the crash: %v, want refused", dialErr)
		}
		if c1Err == nil {
			t.Fatal("c1's connection survived the crash")
		}
		if len(pw.holds) != 2 || !strings.HasPrefix(pw.holds[1], "c2 ") {
			t.Fatalf("holds %v, want c2's after the restart (an empty lock table)", pw.holds)
		}
		if n.Route("db1") != "db2" || len(kinds(w.Trace.Events, event.DBPromoted)) != 1 {
			t.Fatalf("route %q after the promotion", n.Route("db1"))
		}
	})
}

// A paused client is frozen whole (sim/freeze.go): c1 waits in
// pg_advisory_lock, held by c2, under pgx's 2 s context deadline, and
// pauses at 1 s for 10 s. The deadline passes mid-pause, but pgx's
// goroutines are frozen with the rest of the process: no cancel request,
// no read deadline, no segment leaves c1 until it resumes, and its call
// returns the timeout only then.
func TestPausedClientIsFrozenWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pw := newPgWorld(5, dbnet.Keepalive{})
		w := pw.w
		c1, c2 := w.NewHost("c1", nil), w.NewHost("c2", nil)
		var returned time.Duration
		var lockErr error
		c2.Spawn("c2", 0, func(p *sim.Process) {
			c := pw.connect(p)
			p.Outside(func() { _, _ = c.Exec(context.Background(), "SELECT pg_advisory_lock(1)") })
			p.Sleep(time.Minute)
		})
		c1.Spawn("c1", 100*time.Millisecond, func(p *sim.Process) {
			c := pw.connect(p)
			p.Outside(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_, lockErr = c.Exec(ctx, "SELECT pg_advisory_lock(1)")
			})
			returned = p.TrueNow()
		})
		w.At(time.Second, func() {
			c1.Pause()
			w.After(10*time.Second, c1.Resume)
		})
		w.Trace.Keep = true
		if err := w.Run(40 * time.Second); err != nil {
			t.Fatal(err)
		}
		if lockErr == nil {
			t.Fatal("c1's pg_advisory_lock returned without an error, want its context's deadline")
		}
		if returned < 11*time.Second {
			t.Fatalf("c1's call returned at %v (%v), during its pause (1s to 11s)", returned, lockErr)
		}
		for _, ev := range pw.w.Trace.Events {
			if ev.Client == "c1" && ev.At > time.Second && ev.At < 11*time.Second && (ev.Kind == event.DBConnOpened || ev.Kind == event.DBSegmentHeld) {
				t.Fatalf("c1 acted during its pause: %+v", ev)
			}
		}
	})
}
