package live

import (
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// workload is one client's cycles, as a simulated run's workload does them
// (runner/workload.go): want the lock, acquire it, read the stock, work,
// write it back minus one unless the client checks its lease and finds it
// gone, release, think.
type workload struct {
	r    *run
	c    *clientHost
	lock algorithms.Lock
	plan scenarios.ClientPlan
	rng  *rand.Rand
}

func (wl *workload) run() {
	sc, rec, name := wl.r.sc, wl.r.rec, wl.c.Name
	e := wl.c.workerEnv()
	info, _ := algorithms.Lookup(sc.Algorithm)
	for cycle := 0; cycle < wl.plan.Cycles; cycle++ {
		rec.want(name)
		var lease *algorithms.Lease
		gaveUp := false
		for lease == nil && !gaveUp {
			call := wl.r.since()
			l, err := wl.lock.Acquire(e)
			if !info.Hidden && errors.Is(err, algorithms.ErrNotAcquired) {
				// The lock's own wait policy gave up: the cycle goes
				// without the lock, as in a simulated run.
				rec.gaveUp(name)
				gaveUp = true
				continue
			}
			if err != nil {
				// Any other error is the lock's answer too; the
				// application calls again after its think time, as in a
				// simulated run (a user's own lock after the wait delay).
				if info.Hidden {
					e.Sleep(sc.Wait.Delay.D() + scenarios.Draw(wl.rng, scenarios.Range{Max: sc.Wait.Jitter.D()}))
				} else {
					e.Sleep(scenarios.Draw(wl.rng, wl.plan.Think))
				}
				continue
			}
			lease = l
			rec.acquired(name, call, l)
			l.WhenLost(func() { rec.stop(name, "lost") })
		}
		if gaveUp {
			e.Sleep(scenarios.Draw(wl.rng, wl.plan.Think))
			continue
		}
		if v, err := wl.r.store.read(wl.c, lease.FencingToken); err == nil {
			e.Sleep(scenarios.Draw(wl.rng, wl.plan.Work))
			switch {
			case (sc.Clients.CheckValidity || lease.Lost()) && !lease.Valid(e.Now()):
				rec.stop(name, "validity")
			case !wl.plan.Writes:
			default:
				wl.r.store.write(wl.c, v-1, v, lease.FencingToken)
			}
		}
		rec.stop(name, "release")
		wl.lock.Release(e, lease)
		e.Sleep(scenarios.Draw(wl.rng, wl.plan.Think))
	}
}

// recorder keeps a live run's history as the simulated runner's recorder
// does (runner/workload.go), with real times since the run's start.
type recorder struct {
	mu        sync.Mutex
	clock     func() time.Duration
	intervals []checker.Interval
	wants     []checker.Want
	open      map[string]*openHold
	wanting   map[string]time.Duration
	// mode is a client's hold mode ("read", "write" or ""), so that the
	// checker knows a reader's hold from a writer's.
	mode func(client string) string
}

type openHold struct {
	iv checker.Interval
}

func (r *recorder) want(client string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.wanting[client]; !ok {
		r.wanting[client] = r.clock()
	}
}

func (r *recorder) endWant(client, outcome string, at time.Duration) {
	if from, ok := r.wanting[client]; ok {
		r.wants = append(r.wants, checker.Want{Client: client, From: from, To: at, Outcome: outcome, Mode: r.mode(client)})
		delete(r.wanting, client)
	}
}

func (r *recorder) gaveUp(client string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endWant(client, "gave up", r.clock())
}

func (r *recorder) acquired(client string, call time.Duration, l *algorithms.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock()
	r.endWant(client, "acquired", now)
	r.open[client] = &openHold{iv: checker.Interval{Client: client, AcquireCall: call, Start: now, LockValue: l.LockValue, FencingToken: l.FencingToken, Mode: r.mode(client)}}
}

func (r *recorder) stop(client, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.close(client, reason, r.clock())
}

func (r *recorder) close(client, reason string, at time.Duration) {
	h := r.open[client]
	if h == nil {
		return
	}
	h.iv.End, h.iv.EndReason = at, reason
	r.intervals = append(r.intervals, h.iv)
	delete(r.open, client)
}

func (r *recorder) crash(client string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock()
	r.close(client, "crash", now)
	r.endWant(client, "crash", now)
}

// finish closes what is still open at end and returns the history, in the
// order of true time.
func (r *recorder) finish(end time.Duration, s *store) checker.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range sortedKeys(r.open) {
		r.close(c, "end of run", end)
	}
	for _, c := range sortedKeys(r.wanting) {
		r.endWant(c, "end of run", end)
	}
	sort.SliceStable(r.intervals, func(i, j int) bool { return r.intervals[i].Start < r.intervals[j].Start })
	sort.SliceStable(r.wants, func(i, j int) bool { return r.wants[i].From < r.wants[j].From })
	s.mu.Lock()
	defer s.mu.Unlock()
	return checker.History{Intervals: r.intervals, Wants: r.wants, Accesses: append([]checker.Access(nil), s.log...), Initial: s.initial, End: end}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
