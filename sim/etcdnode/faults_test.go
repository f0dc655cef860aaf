package etcdnode

import (
	"context"
	"strings"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

// inBubble runs fn on a new world with a cluster, inside a synctest
// bubble with crypto/rand seeded, and returns the world's trace lines.
func inBubble(t *testing.T, seed uint64, cfg Config, fn func(w *sim.World, c *Cluster)) []string {
	t.Helper()
	cryptotest.SetGlobalRandom(t, seed)
	var lines []string
	synctest.Test(t, func(t *testing.T) {
		w := sim.New(seed)
		w.UseBubble()
		c := NewOnWorld(w, cfg)
		fn(w, c)
		for _, e := range w.Trace.Entries {
			lines = append(lines, e.String())
		}
	})
	return lines
}

func kinds(w *sim.World, k event.Kind) []event.Event {
	var out []event.Event
	for _, e := range w.Trace.Events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// lockOnce takes the mutex "/lock" for client host h with a session of
// ttl seconds and reports the hold's start and the key's create revision;
// it returns the session so that the caller decides when it ends.
func lockOnce(p *sim.Process, c *Cluster, ttl int, timeout time.Duration) (*concurrency.Session, *concurrency.Mutex, error) {
	var s *concurrency.Session
	var mu *concurrency.Mutex
	var err error
	p.Outside(func() {
		var cli *clientv3.Client
		cli, err = c.NewClient(p.Host, clientv3.Config{})
		if err != nil {
			return
		}
		s, err = concurrency.NewSession(cli, concurrency.WithTTL(ttl))
		if err != nil {
			return
		}
		mu = concurrency.NewMutex(s, "/lock")
		ctx, cancel := context.WithTimeout(p.Context(), timeout)
		defer cancel()
		err = mu.Lock(ctx)
	})
	return s, mu, err
}

// etcd#10811's shape: the holder is cut off from every member; it cannot
// keep its lease alive, the leader revokes it after the TTL, and a second
// client acquires while the first still believes it holds the lock. The
// key's create revision, the fencing token, is larger for the second.
func TestPartitionedHolderLosesItsLeaseAndASecondClientAcquires(t *testing.T) {
	var c1Rev, c2Rev int64
	var c1From, c2From time.Duration
	var c2Err error
	var revoked []event.Event
	inBubble(t, 3, Config{Members: 3}, func(w *sim.World, c *Cluster) {
		h1, h2 := w.NewHost("c1", nil), w.NewHost("c2", nil)
		h1.Spawn("c1", 10*time.Millisecond, func(p *sim.Process) {
			_, mu, err := lockOnce(p, c, 5, 10*time.Second)
			if err != nil {
				t.Errorf("c1 lock: %v", err)
				return
			}
			c1From, c1Rev = p.TrueNow(), mu.Header().Revision
			for _, m := range c.Members() {
				w.Net.Cut("c1", m.Name)
				w.Net.Cut(m.Name, "c1")
			}
			p.Sleep(30 * time.Second) // still "working" under the lock
		})
		h2.Spawn("c2", time.Second, func(p *sim.Process) {
			_, mu, err := lockOnce(p, c, 5, 25*time.Second)
			if err != nil {
				c2Err = err
				return
			}
			c2From, c2Rev = p.TrueNow(), mu.Header().Revision
		})
		if err := w.Run(40 * time.Second); err != nil {
			t.Fatalf("run: %v", err)
		}
		revoked = kinds(w, event.EtcdLeaseRevoked)
	})
	if c2Err != nil {
		t.Fatalf("c2 never acquired: %v", c2Err)
	}
	// c1 took the lock at once; c2 only once c1's lease was gone: the
	// TTL (5 s) after c1's last keep-alive reached the leader.
	if c1From > 100*time.Millisecond || c2From < c1From+5*time.Second || c2From > c1From+8*time.Second {
		t.Fatalf("c1 acquired at %v, c2 at %v: want c2 about the 5 s TTL later", c1From, c2From)
	}
	if len(revoked) != 1 || revoked[0].Keys != 1 {
		t.Fatalf("lease revocations %+v, want c1's, deleting its one key", revoked)
	}
	if c2Rev <= c1Rev {
		t.Fatalf("fencing tokens: c1 %d, c2 %d", c1Rev, c2Rev)
	}
}

// The leader crashes while three clients take turns; a new leader is
// elected, the clients move to the other members, and the lock keeps its
// one holder at a time. The old leader comes back with its log and
// catches up.
func TestLeaderCrashAndRestartWithItsLog(t *testing.T) {
	r := runMutex(t, mutexSpec{seed: 5, members: 3, rounds: 4, arm: func(r *mutexRun) {
		r.w.At(700*time.Millisecond, func() { r.c.Crash("etcd1") })
		r.w.At(6*time.Second, func() { r.c.Restart("etcd1", true) })
	}})
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	if o := r.overlaps(); len(o) > 0 {
		t.Fatalf("two holders: %v", o)
	}
	for _, cl := range []string{"c1", "c2", "c3"} {
		if n := r.count(cl); n < 3 {
			t.Fatalf("%s held the lock %d times (errors %v)\n%s", cl, n, r.errs, r.trace())
		}
	}
	tr := r.trace()
	var leaders []string
	for _, l := range r.lines {
		if strings.Contains(l, "leads raft term") {
			leaders = append(leaders, strings.Fields(l)[1])
		}
	}
	if len(leaders) < 2 || leaders[0] != "etcd1" || leaders[1] == "etcd1" {
		t.Fatalf("leaders %v: want etcd1 first, then another member\n%s", leaders, tr)
	}
	if !strings.Contains(tr, "etcd member restarts, raft log log") {
		t.Fatalf("no restart with the log in the trace")
	}
	// The restarted member applied the whole log again: its revision is
	// the cluster's.
	var revs []int64
	for _, m := range r.c.Members() {
		revs = append(revs, m.kv.rev)
	}
	if revs[0] != revs[1] || revs[1] != revs[2] {
		t.Fatalf("member revisions at the end %v", revs)
	}
}

// A new leader's lessor gives every lease its full TTL plus an election
// timeout (etcd's lessor Promote): after a leader change, a lease whose
// keep-alives stopped lives longer than its TTL said.
func TestLeaderChangeExtendsLeases(t *testing.T) {
	var ttlBefore, ttlAfter int64
	var expired []event.Event
	var granted, crashedAt time.Duration
	inBubble(t, 11, Config{Members: 3}, func(w *sim.World, c *Cluster) {
		h := w.NewHost("c1", nil)
		h.Spawn("c1", 10*time.Millisecond, func(p *sim.Process) {
			var cli *clientv3.Client
			var err error
			var id clientv3.LeaseID
			p.Outside(func() {
				cli, err = c.NewClient(h, clientv3.Config{Endpoints: []string{"etcd2:2379"}})
				if err != nil {
					return
				}
				var g *clientv3.LeaseGrantResponse
				g, err = cli.Grant(p.Context(), 10)
				if err == nil {
					id = g.ID
				}
			})
			if err != nil {
				t.Errorf("grant: %v", err)
				return
			}
			granted = p.TrueNow()
			p.Sleep(4 * time.Second)
			p.Outside(func() {
				r, err := cli.TimeToLive(p.Context(), id)
				if err == nil {
					ttlBefore = r.TTL
				}
			})
			crashedAt = p.TrueNow()
			c.Crash("etcd1") // the leader, with the kernel held by this process
			p.Sleep(3 * time.Second)
			p.Outside(func() {
				r, err := cli.TimeToLive(p.Context(), id)
				if err == nil {
					ttlAfter = r.TTL
				}
			})
			p.Sleep(20 * time.Second) // until the lease expires
		})
		if err := w.Run(40 * time.Second); err != nil {
			t.Fatalf("run: %v", err)
		}
		expired = kinds(w, event.EtcdLeaseExpired)
	})
	if ttlBefore != 6 {
		t.Fatalf("TTL 4 s into a 10 s lease: %d, want 6", ttlBefore)
	}
	// The new leader restarted the lease at 10 s + 1 s when it applied
	// its term's first entry, about an election timeout after the crash.
	if ttlAfter < 9 || ttlAfter > 11 {
		t.Fatalf("TTL 3 s after the leader crashed: %d, want about 10 (full TTL + 1 s extension, less the election)", ttlAfter)
	}
	if len(expired) != 1 {
		t.Fatalf("expiries %+v", expired)
	}
	if at := expired[0].At; at < crashedAt+10*time.Second || at > crashedAt+13*time.Second {
		t.Fatalf("lease granted at %v expired at %v; leader crashed at %v: want about 11-12 s after the crash, not %v after the grant", granted, at, crashedAt, 10*time.Second)
	}
}

// A member restarted without its log (etcd started again on a wiped data
// directory with the same member id) contradicts what the leader knows of
// it: raft panics on the leader's first heartbeat, and the member dies
// again, as etcd does. The two others keep the lock going.
func TestMemberRestartedWithoutItsLogDies(t *testing.T) {
	r := runMutex(t, mutexSpec{seed: 9, members: 3, rounds: 5, arm: func(r *mutexRun) {
		r.w.At(500*time.Millisecond, func() { r.c.Crash("etcd3") })
		r.w.At(time.Second, func() { r.c.Restart("etcd3", false) })
	}})
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	if o := r.overlaps(); len(o) > 0 {
		t.Fatalf("two holders: %v", o)
	}
	if n := len(r.holds); n != 15 {
		t.Fatalf("%d holds, want 15 (errors %v)", n, r.errs)
	}
	tr := r.trace()
	if !strings.Contains(tr, "etcd member restarts, raft log empty (0 entries)") {
		t.Fatalf("no empty restart in the trace")
	}
	if !strings.Contains(tr, "etcd3      etcd member crashes: tocommit(") || !strings.Contains(tr, "Was the raft log corrupted, truncated, or lost?") {
		t.Fatalf("etcd3 did not die of its lost log\n%s", tr)
	}
	if !r.c.Member("etcd3").down {
		t.Fatalf("etcd3 is up at the end")
	}
}

// The leader's host pauses (a stop-the-world pause of the etcd process):
// the others elect a new leader, the clients move on, and the old leader
// steps down when it resumes.
func TestLeaderPauseElectsAnother(t *testing.T) {
	r := runMutex(t, mutexSpec{seed: 13, members: 3, rounds: 4, arm: func(r *mutexRun) {
		r.w.At(600*time.Millisecond, func() { r.c.Member("etcd1").Host.Pause() })
		r.w.At(4*time.Second, func() { r.c.Member("etcd1").Host.Resume() })
	}})
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	if o := r.overlaps(); len(o) > 0 {
		t.Fatalf("two holders: %v", o)
	}
	var leaders []string
	for _, l := range r.lines {
		if strings.Contains(l, "leads raft term") {
			leaders = append(leaders, strings.Fields(l)[1])
		}
	}
	if len(leaders) < 2 || leaders[1] == "etcd1" {
		t.Fatalf("leaders %v\n%s", leaders, r.trace())
	}
	if l := r.c.Leader(); l == nil || l.Name == "etcd1" {
		t.Fatalf("leader at the end: %v", l)
	}
	if n := len(r.holds); n < 10 {
		t.Fatalf("%d holds (errors %v)", n, r.errs)
	}
}

// A reply lost on the wire resets the client's connection (TCP gives up
// on the segment); the client reconnects and the lock goes on with one
// holder at a time.
func TestLostReplyResetsTheConnection(t *testing.T) {
	dropped := 0
	r := runMutex(t, mutexSpec{seed: 17, members: 3, rounds: 3, arm: func(r *mutexRun) {
		r.w.Net.AddFilter(func(m *sim.Message) (bool, time.Duration, string) {
			if dropped == 0 && m.Dir == sim.Reply && m.Client == "c2" && m.Op == "DATA" && r.w.Now() > 300*time.Millisecond {
				dropped++
				return true, 0, "test: the reply is lost"
			}
			return false, 0, ""
		})
	}})
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	if dropped != 1 {
		t.Fatalf("dropped %d replies", dropped)
	}
	if o := r.overlaps(); len(o) > 0 {
		t.Fatalf("two holders: %v", o)
	}
	if !strings.Contains(r.trace(), "reset: reply DATA") {
		t.Fatalf("no reset for the lost reply\n%s", r.trace())
	}
	if n := r.count("c1") + r.count("c3"); n != 6 {
		t.Fatalf("c1 and c3 held %d times (errors %v)", n, r.errs)
	}
}

// The leader's clock runs fast (drift): it times leases on its own clock,
// so a lease without keep-alives expires early in true time.
func TestFastLeaderClockExpiresLeasesEarly(t *testing.T) {
	var expired []event.Event
	inBubble(t, 19, Config{Members: 3}, func(w *sim.World, c *Cluster) {
		c.Member("etcd1").Host.Clock.SetRate(0, 500000) // 1.5 s per true second
		h := w.NewHost("c1", nil)
		h.Spawn("c1", 10*time.Millisecond, func(p *sim.Process) {
			p.Outside(func() {
				cli, err := c.NewClient(h, clientv3.Config{})
				if err == nil {
					_, err = cli.Grant(p.Context(), 9)
				}
				if err != nil {
					t.Errorf("grant: %v", err)
				}
			})
			p.Sleep(20 * time.Second)
		})
		if err := w.Run(30 * time.Second); err != nil {
			t.Fatalf("run: %v", err)
		}
		expired = kinds(w, event.EtcdLeaseExpired)
	})
	// 9 s on a clock 1.5 times fast is 6 s of true time (the check runs
	// every 5 ticks of the same fast clock).
	if len(expired) != 1 || expired[0].At < 6*time.Second || expired[0].At > 6500*time.Millisecond {
		t.Fatalf("expiries %+v, want one about 6 s in", expired)
	}
}
