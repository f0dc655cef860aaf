package zklock_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/zklock"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/zk"
)

const ms = time.Millisecond

// lab is an ensemble and n clients, each with a lock of the named
// algorithm, on a network with a fixed 1 ms latency.
type lab struct {
	t     *testing.T
	w     *sim.World
	srv   *zk.Server
	hosts []*sim.Host
	conns []*zk.Conn
	locks []algorithms.Lock
	log   []string // "c1 holds", "c1 releases", "c1 lost", in true-time order
}

func newLab(t *testing.T, alg string, n int, extra map[string]string, opt zk.Options) *lab {
	t.Helper()
	w := sim.New(1)
	w.Net.Latency, w.Net.Jitter = ms, 0
	l := &lab{t: t, w: w, srv: zk.NewServer(w, "", nil)}
	info, err := algorithms.Lookup(alg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		h := w.NewHost(fmt.Sprintf("c%d", i), nil)
		c := l.srv.Connect(h, opt)
		lock, err := info.New(algorithms.Params{Key: "lock", Wait: algorithms.WaitPolicy{Delay: 100 * ms}, Extra: extra}, algorithms.Conns{Backend: c})
		if err != nil {
			t.Fatal(err)
		}
		l.hosts, l.conns, l.locks = append(l.hosts, h), append(l.conns, c), append(l.locks, lock)
	}
	return l
}

func (l *lab) note(format string, args ...any) {
	l.log = append(l.log, fmt.Sprintf(format, args...))
}

// cycle makes client i (0-based) start at start, acquire, hold for hold,
// and release; it returns the lease through *out if out is not nil.
func (l *lab) cycle(i int, start, hold time.Duration, out **algorithms.Lease) {
	name := l.hosts[i].Name
	l.hosts[i].Spawn(name, start, func(p *sim.Process) {
		env := scenarios.Env(p)
		lease, err := l.locks[i].Acquire(env)
		if err != nil {
			l.note("%s acquire failed: %v", name, err)
			return
		}
		l.note("%s holds", name)
		lease.WhenLost(func() { l.note("%s lost@%v", name, l.w.Now()) })
		if out != nil {
			*out = lease
		}
		p.Sleep(hold)
		if err := l.locks[i].Release(env, lease); err != nil {
			l.note("%s release failed: %v", name, err)
		}
		l.note("%s releases", name)
	})
}

func (l *lab) run(limit time.Duration) {
	l.t.Helper()
	if err := l.w.Run(limit); err != nil {
		l.t.Fatal(err)
	}
}

func (l *lab) wantLog(want ...string) {
	l.t.Helper()
	if !slices.Equal(l.log, want) {
		l.t.Fatalf("log:\n  %s\nwant:\n  %s", strings.Join(l.log, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestQueueServesInArrivalOrderWakingOneWaiterPerRelease(t *testing.T) {
	l := newLab(t, "zk-queue", 4, nil, zk.Options{})
	for i, start := range []time.Duration{0, 30 * ms, 20 * ms, 40 * ms} {
		l.cycle(i, start, 100*ms, nil)
	}
	l.run(10 * time.Second)
	l.wantLog("c1 holds", "c1 releases", "c3 holds", "c3 releases", "c2 holds", "c2 releases", "c4 holds", "c4 releases")
	if l.srv.Notifications != 3 {
		t.Fatalf("%d notifications, want 3", l.srv.Notifications)
	}
	if kids := l.srv.ChildrenOf("/locks/lock"); len(kids) != 0 {
		t.Fatalf("nodes left behind: %q", kids)
	}
}

func TestSimpleWakesEveryWaiterOnEveryRelease(t *testing.T) {
	l := newLab(t, "zk-simple", 5, nil, zk.Options{})
	for i := range 5 {
		l.cycle(i, time.Duration(i)*5*ms, 100*ms, nil)
	}
	l.run(10 * time.Second)
	holds := 0
	for _, s := range l.log {
		if strings.HasSuffix(s, " holds") {
			holds++
		}
	}
	if holds != 5 || l.log[0] != "c1 holds" {
		t.Fatalf("log %q", l.log)
	}
	if want := int64(4 + 3 + 2 + 1); l.srv.Notifications != want {
		t.Fatalf("%d notifications, want %d", l.srv.Notifications, want)
	}
}

func TestLeaseEndsOnLostOrOnSuspended(t *testing.T) {
	// c1 is cut off at 1 s; its last contact was the CHILDREN reply at
	// 12 ms, so it is SUSPENDED at 4.012 s, the server expires its session
	// at 6.011 s (c2 takes the lock), and it reports LOST at 10.012 s.
	// c1's release at 12 s gets no reply (the partition lasts until 20 s):
	// the naive queue reports it; the fixed queue hands the delete to its
	// guaranteed-delete task (which stops at once: the session is LOST, so
	// the node is gone anyway) and the release itself succeeds.
	failed := "c1 release failed: " + zk.ErrConnectionLoss.Error()
	for _, tc := range []struct {
		alg, stop string
		want      []string
	}{
		{"zk-queue-naive", "false", []string{"c1 holds", "c2 holds", "c2 releases", "c1 lost@10.012s", failed, "c1 releases"}},
		{"zk-queue-naive", "true", []string{"c1 holds", "c1 lost@4.012s", "c2 holds", "c2 releases", failed, "c1 releases"}},
		{"zk-queue", "false", []string{"c1 holds", "c2 holds", "c2 releases", "c1 lost@10.012s", "c1 releases"}},
		{"zk-queue", "true", []string{"c1 holds", "c1 lost@4.012s", "c2 holds", "c2 releases", "c1 releases"}},
	} {
		t.Run(tc.alg+"/stop_on_suspended="+tc.stop, func(t *testing.T) {
			l := newLab(t, tc.alg, 2, map[string]string{"stop_on_suspended": tc.stop}, zk.Options{SessionTimeout: 6 * time.Second})
			l.cycle(0, 0, 12*time.Second, nil)
			l.cycle(1, 50*ms, 100*ms, nil)
			l.w.At(time.Second, func() { l.w.Net.Cut("c1", "zk"); l.w.Net.Cut("zk", "c1") })
			l.w.At(20*time.Second, l.w.Net.HealAll)
			l.run(30 * time.Second)
			l.wantLog(tc.want...)
		})
	}
}

func TestFencingTokens(t *testing.T) {
	for _, tc := range []struct {
		alg, fencing string
		want         []int64
	}{
		{"zk-queue", "sequence", []int64{1, 2}}, // sequence numbers 0 and 1, plus one
		{"zk-queue", "zxid", []int64{5, 6}},     // zxids: 2 sessions, /locks, /locks/lock, then the nodes
		{"zk-queue", "none", []int64{0, 0}},
		{"zk-simple", "zxid", []int64{3, 5}}, // 2 sessions, c1's /lock, its delete, c2's /lock
	} {
		t.Run(tc.alg+"/"+tc.fencing, func(t *testing.T) {
			l := newLab(t, tc.alg, 2, map[string]string{"fencing": tc.fencing}, zk.Options{})
			var a, b *algorithms.Lease
			l.cycle(0, 0, 100*ms, &a)
			l.cycle(1, 50*ms, 100*ms, &b)
			l.run(10 * time.Second)
			if a == nil || b == nil || a.Fence != tc.want[0] || b.Fence != tc.want[1] {
				t.Fatalf("fences %v, %v; want %v (log %q)", fence(a), fence(b), tc.want, l.log)
			}
		})
	}
}

func fence(l *algorithms.Lease) any {
	if l == nil {
		return nil
	}
	return l.Fence
}

// dropFirstCreateReply loses the reply to client's first create of a lock
// node (not of the parents /locks and /locks/lock).
func dropFirstCreateReply(w *sim.World, client string) {
	done := false
	w.Net.AddFilter(func(m *sim.Message) (bool, time.Duration, string) {
		if done || m.Dir != sim.Reply || m.Op != "CREATE" || m.Client != client || !strings.HasPrefix(m.Summary, "created ") {
			return false, 0, ""
		}
		if path := strings.Fields(m.Summary)[1]; path == "/locks" || path == "/locks/lock" {
			return false, 0, ""
		}
		done = true
		return true, 0, "test: lost create reply"
	})
}

func TestQueueLostCreateReply(t *testing.T) {
	for _, tc := range []struct {
		protection string
		want       []string
		orphans    int
	}{
		{"true", []string{"c1 holds", "c1 releases", "c2 holds", "c2 releases"}, 0},
		// c1's first node is lowest, c1 waits behind c2, c2 behind the orphan.
		{"false", nil, 1},
	} {
		t.Run("guid_protection="+tc.protection, func(t *testing.T) {
			l := newLab(t, "zk-queue", 2, map[string]string{"guid_protection": tc.protection}, zk.Options{})
			dropFirstCreateReply(l.w, "c1")
			l.cycle(0, 0, 100*ms, nil)
			l.cycle(1, 50*ms, 100*ms, nil)
			l.run(20 * time.Second)
			l.wantLog(tc.want...)
			if got := len(l.srv.Orphans()); got != tc.orphans {
				t.Fatalf("%d orphans, want %d", got, tc.orphans)
			}
			if tc.protection == "false" {
				kids := l.srv.ChildrenOf("/locks/lock")
				if want := []string{"lock-0000000000", "lock-0000000001", "lock-0000000002"}; !slices.Equal(kids, want) {
					t.Fatalf("children %q, want %q", kids, want)
				}
				for i, owner := range []int{0, 1, 0} {
					_, st, _ := l.srv.Node("/locks/lock/" + kids[i])
					if st.EphemeralOwner != l.conns[owner].SessionID() {
						t.Fatalf("%s is not c%d's", kids[i], owner+1)
					}
				}
			}
		})
	}
}

func TestSimpleRecognisesItsOwnNodeAfterALostCreateReply(t *testing.T) {
	l := newLab(t, "zk-simple", 2, nil, zk.Options{})
	dropFirstCreateReply(l.w, "c1")
	l.cycle(0, 0, 100*ms, nil)
	l.cycle(1, 50*ms, 100*ms, nil)
	l.run(20 * time.Second)
	l.wantLog("c1 holds", "c1 releases", "c2 holds", "c2 releases")
}

func TestSimpleReleaseLeavesAnotherClientsNode(t *testing.T) {
	// c1 pauses past its session; c2 takes /lock; c1 wakes and releases:
	// the node is c2's, so c1 must not delete it.
	l := newLab(t, "zk-simple", 2, nil, zk.Options{SessionTimeout: 3 * time.Second})
	l.cycle(0, 0, 2*time.Second, nil)
	l.cycle(1, 50*ms, 5*time.Second, nil)
	l.w.At(time.Second, l.hosts[0].Pause)
	l.w.At(6*time.Second, l.hosts[0].Resume)
	var owner int64
	l.w.At(6500*ms, func() {
		if _, st, ok := l.srv.Node("/lock"); ok {
			owner = st.EphemeralOwner
		}
	})
	l.run(20 * time.Second)
	if owner == 0 || owner != l.conns[1].SessionID() {
		t.Fatalf("/lock after c1's release belongs to session %d, want c2's %d (log %q)", owner, l.conns[1].SessionID(), l.log)
	}
}

func TestOptionErrors(t *testing.T) {
	w := sim.New(1)
	srv := zk.NewServer(w, "", nil)
	conn := srv.Connect(w.NewHost("c1", nil), zk.Options{})
	for _, tc := range []struct {
		alg   string
		extra map[string]string
		conns algorithms.Conns
		want  string
	}{
		{"zk-queue", map[string]string{"guid_protection": "yes please"}, algorithms.Conns{Backend: conn}, "params.guid_protection"},
		{"zk-queue", map[string]string{"stop_on_suspended": "maybe"}, algorithms.Conns{Backend: conn}, "params.stop_on_suspended"},
		{"zk-queue", map[string]string{"fencing": "incr"}, algorithms.Conns{Backend: conn}, "params.fencing"},
		{"zk-simple", map[string]string{"fencing": "sequence"}, algorithms.Conns{Backend: conn}, "sequential"},
		{"zk-queue", nil, algorithms.Conns{}, "needs a ZooKeeper connection"},
	} {
		info, _ := algorithms.Lookup(tc.alg)
		_, err := info.New(algorithms.Params{Key: "lock", Extra: tc.extra}, tc.conns)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error %v, want one mentioning %q", tc.alg, tc.extra, err, tc.want)
		}
	}
	for _, name := range []string{"zk-simple", "zk-queue"} {
		if info, err := algorithms.Lookup(name); err != nil || info.Backend != "zookeeper" {
			t.Errorf("%s: %+v %v", name, info, err)
		}
	}
}

func TestConstructorsDefaultToCurator(t *testing.T) {
	w := sim.New(1)
	conn := zk.NewServer(w, "", nil).Connect(w.NewHost("c1", nil), zk.Options{})
	q := zklock.NewQueue(conn, "/locks/x")
	if !q.Protected || q.StopOnSuspended || q.Fencing != zklock.FenceNone || q.Retries != 3 {
		t.Fatalf("NewQueue: %+v", q)
	}
}

// TestLostDeleteNaiveVsGuaranteed: c1's first DELETE is lost. The naive
// queue reports the failed release and leaves its node: c2 waits for as
// long as c1's session lives (the whole run). The fixed queue retries the
// delete in the background (guaranteed delete) and c2 gets the lock.
func TestLostDeleteNaiveVsGuaranteed(t *testing.T) {
	failed := "c1 release failed: " + zk.ErrConnectionLoss.Error()
	for _, tc := range []struct {
		alg  string
		want []string
	}{
		{"zk-queue-naive", []string{"c1 holds", failed, "c1 releases"}},
		{"zk-queue", []string{"c1 holds", "c1 releases", "c2 holds", "c2 releases"}},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			l := newLab(t, tc.alg, 2, nil, zk.Options{SessionTimeout: 6 * time.Second})
			lost := false
			l.w.Net.AddFilter(func(m *sim.Message) (bool, time.Duration, string) {
				if !lost && m.From == "c1" && m.Op == "DELETE" {
					lost = true
					return true, 0, "test: c1's DELETE lost"
				}
				return false, 0, ""
			})
			l.cycle(0, 0, 100*ms, nil)
			l.cycle(1, 50*ms, 100*ms, nil)
			l.run(20 * time.Second)
			l.wantLog(tc.want...)
			if !lost {
				t.Fatal("no DELETE was sent")
			}
		})
	}
}

// TestUnansweredLookupNaiveVsFixed: the reply to c1's protected create is
// lost and so is its first lookup for the GUID. The naive queue takes the
// unanswered lookup for "not there", creates a second node and waits on
// its own orphan until the run ends; the fixed queue asks again, finds its
// node and holds.
func TestUnansweredLookupNaiveVsFixed(t *testing.T) {
	for _, tc := range []struct {
		alg  string
		want []string
	}{
		{"zk-queue-naive", nil},
		{"zk-queue", []string{"c1 holds", "c1 releases"}},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			l := newLab(t, tc.alg, 1, nil, zk.Options{SessionTimeout: 6 * time.Second})
			createReply, lookup := false, false
			l.w.Net.AddFilter(func(m *sim.Message) (bool, time.Duration, string) {
				switch {
				case !createReply && m.To == "c1" && m.Op == "CREATE" && strings.Contains(m.Summary, "-lock-"):
					createReply = true
					return true, 0, "test: reply to c1's CREATE lost"
				case createReply && !lookup && m.From == "c1" && m.Op == "CHILDREN":
					lookup = true
					return true, 0, "test: c1's lookup lost"
				}
				return false, 0, ""
			})
			l.cycle(0, 0, 100*ms, nil)
			l.run(30 * time.Second)
			l.wantLog(tc.want...)
			if kids := l.srv.ChildrenOf("/locks/lock"); tc.alg == "zk-queue-naive" && len(kids) != 2 {
				t.Fatalf("naive: nodes %q; want the orphan and the second node", kids)
			}
		})
	}
}
