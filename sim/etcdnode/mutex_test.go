package etcdnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/sim"
)

// hold is one client's time holding the lock, in true time, with the
// lock key's create revision (its fencing token).
type hold struct {
	client   string
	from, to time.Duration
	rev      int64
}

type mutexRun struct {
	w      *sim.World
	c      *Cluster
	holds  []hold
	errs   []string
	err    error
	digest string
	lines  []string
}

type mutexSpec struct {
	seed    uint64
	members int
	clients int
	rounds  int
	hold    time.Duration
	ttl     int // session TTL in seconds
	limit   time.Duration
	arm     func(r *mutexRun)
}

// runMutex runs spec's clients, each taking the unmodified
// concurrency.Mutex "/lock" rounds times through a session, inside a
// synctest bubble with crypto/rand seeded (raft draws its election
// timeouts from it).
func runMutex(t *testing.T, spec mutexSpec) *mutexRun {
	t.Helper()
	if spec.clients == 0 {
		spec.clients = 3
	}
	if spec.hold == 0 {
		spec.hold = 200 * time.Millisecond
	}
	if spec.ttl == 0 {
		spec.ttl = 5
	}
	if spec.limit == 0 {
		spec.limit = 2 * time.Minute
	}
	cryptotest.SetGlobalRandom(t, spec.seed)
	var r *mutexRun
	synctest.Test(t, func(t *testing.T) { r = mutexRounds(spec) })
	return r
}

func mutexRounds(spec mutexSpec) *mutexRun {
	w := sim.New(spec.seed)
	w.UseBubble()
	c := NewOnWorld(w, Config{Members: spec.members})
	r := &mutexRun{w: w, c: c}
	for i := 1; i <= spec.clients; i++ {
		name := fmt.Sprintf("c%d", i)
		h := w.NewHost(name, nil)
		h.Spawn(name, time.Duration(i)*10*time.Millisecond, func(p *sim.Process) {
			var cli *clientv3.Client
			var s *concurrency.Session
			var err error
			p.Outside(func() {
				cli, err = c.NewClient(h, clientv3.Config{})
				if err == nil {
					s, err = concurrency.NewSession(cli, concurrency.WithTTL(spec.ttl))
				}
			})
			if err != nil {
				r.errs = append(r.errs, fmt.Sprintf("%v %s: session: %v", p.TrueNow(), name, err))
				return
			}
			for k := 0; k < spec.rounds; k++ {
				mu := concurrency.NewMutex(s, "/lock")
				p.Outside(func() {
					ctx, cancel := context.WithTimeout(p.Context(), 30*time.Second)
					defer cancel()
					err = mu.Lock(ctx)
				})
				if err != nil {
					r.errs = append(r.errs, fmt.Sprintf("%v %s: lock: %v", p.TrueNow(), name, err))
					p.Sleep(time.Second)
					continue
				}
				from := p.TrueNow()
				p.Sleep(spec.hold)
				r.holds = append(r.holds, hold{name, from, p.TrueNow(), mu.Header().Revision})
				p.Outside(func() {
					ctx, cancel := context.WithTimeout(p.Context(), 10*time.Second)
					defer cancel()
					err = mu.Unlock(ctx)
				})
				if err != nil {
					r.errs = append(r.errs, fmt.Sprintf("%v %s: unlock: %v", p.TrueNow(), name, err))
				}
				p.Sleep(10 * time.Millisecond)
			}
			p.Outside(func() {
				ctx, cancel := context.WithTimeout(p.Context(), 10*time.Second)
				defer cancel()
				_ = s.Close()
				_ = ctx
			})
		})
	}
	if spec.arm != nil {
		spec.arm(r)
	}
	r.err = w.Run(spec.limit)
	for _, e := range w.Trace.Entries {
		r.lines = append(r.lines, e.String())
	}
	r.digest = w.Trace.SHA256()
	return r
}

// overlaps lists pairs of holds of different clients that overlap.
func (r *mutexRun) overlaps() []string {
	hs := slices.Clone(r.holds)
	slices.SortFunc(hs, func(a, b hold) int { return int(a.from - b.from) })
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

func (r *mutexRun) count(client string) int {
	n := 0
	for _, h := range r.holds {
		if h.client == client {
			n++
		}
	}
	return n
}

func (r *mutexRun) trace() string { return strings.Join(r.lines, "\n") }

func TestMutexLocksAndUnlocksOnOneThreeAndFiveMembers(t *testing.T) {
	for _, members := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("members=%d", members), func(t *testing.T) {
			r := runMutex(t, mutexSpec{seed: 1, members: members, rounds: 3})
			if r.err != nil {
				t.Fatalf("run: %v\n%s", r.err, r.trace())
			}
			for _, c := range []string{"c1", "c2", "c3"} {
				if n := r.count(c); n != 3 {
					t.Fatalf("%s held the lock %d times, want 3 (errors %v)\n%s", c, n, r.errs, r.trace())
				}
			}
			if o := r.overlaps(); len(o) > 0 {
				t.Fatalf("two holders: %v", o)
			}
			// Each acquisition's key was created at a later revision than
			// the one before: the create revisions are fencing tokens.
			hs := slices.Clone(r.holds)
			slices.SortFunc(hs, func(a, b hold) int { return int(a.from - b.from) })
			for i := 1; i < len(hs); i++ {
				if hs[i].rev <= hs[i-1].rev {
					t.Fatalf("hold %d revision %d after %d", i, hs[i].rev, hs[i-1].rev)
				}
			}
			t.Logf("%d members: %d holds, digest %s, %d trace lines, GOMAXPROCS %d", members, len(r.holds), r.digest, len(r.lines), runtime.GOMAXPROCS(0))
		})
	}
}

// firstDifference says where two traces part.
func firstDifference(a, b []string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\n%s\n  vs\n%s", i+1, strings.Join(a[lo:min(len(a), i+3)], "\n"), strings.Join(b[lo:min(len(b), i+3)], "\n"))
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}

// The same seed gives the same trace, byte for byte, run after run, at
// GOMAXPROCS 1, 2 and 4 (and under -race, where CI runs it).
func TestMutexTraceIsDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, members := range []int{1, 3, 5} {
		spec := mutexSpec{seed: 1, members: members, rounds: 3}
		runtime.GOMAXPROCS(1)
		first := runMutex(t, spec)
		for i, procs := range []int{4, 2, 4} {
			runtime.GOMAXPROCS(procs)
			again := runMutex(t, spec)
			if again.digest != first.digest {
				if dir := os.Getenv("ETCDNODE_TRACE_DIR"); dir != "" {
					_ = os.WriteFile(filepath.Join(dir, "a.txt"), []byte(first.trace()), 0o644)
					_ = os.WriteFile(filepath.Join(dir, "b.txt"), []byte(again.trace()), 0o644)
				}
				t.Fatalf("%d members, run %d at GOMAXPROCS %d: digest %s, at GOMAXPROCS 1 %s; %s", members, i+2, procs, again.digest, first.digest, firstDifference(first.lines, again.lines))
			}
		}
	}
}
