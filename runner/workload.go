package runner

import (
	"errors"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

// workload is one client's life: lock cycles around a read-modify-write of
// the protected resource.
type workload struct {
	sc   *scenarios.Scenario
	name string
	lock algorithms.Lock
	inv  *sim.Inventory
	rec  *recorder
	over scenarios.Client
	// ownPolicy: the lock's errors are its own answers (a listed
	// algorithm), not retried by the workload.
	ownPolicy bool
}

func (wl *workload) run(p *sim.Process) {
	kind := wl.sc.Clients.Clock
	if wl.over.Clock != nil {
		kind = *wl.over.Clock
	}
	env := envWithClock(p, kind)
	cycles := wl.sc.Clients.Cycles
	if wl.over.Cycles != nil {
		cycles = *wl.over.Cycles
	}
	work := wl.sc.Clients.Work
	if wl.over.Work != nil {
		work = *wl.over.Work
	}
	w := p.World()
	// A hidden algorithm (a user's own lock under locktest) cannot tell
	// a give-up from an error: see acquire.
	info, _ := algorithms.Lookup(wl.sc.Algorithm)
	wl.ownPolicy = !info.Hidden
	for c := 0; c < cycles; c++ {
		wl.rec.want(wl.name)
		lease := wl.acquire(p, env)
		if lease == nil {
			p.Sleep(scenarios.Draw(w.Rand(), wl.sc.Clients.Think))
			continue
		}
		if v, err := wl.inv.Read(p, lease.FencingToken); err == nil {
			wl.work(p, env, scenarios.Draw(w.Rand(), work))
			if (wl.sc.Clients.CheckValidity || lease.Lost()) && !lease.Valid(env.Now()) {
				// The client consults its lease and stops acting: its hold
				// ends here, at the check, not at the deadline it passed.
				wl.rec.stop(wl.name, "validity")
				skipped := event.Event{Kind: event.WriteSkipped, Client: wl.name, LockValue: lease.LockValue, FencingToken: lease.FencingToken}
				if lease.Lost() {
					// A ZooKeeper holder told SUSPENDED or LOST, a watchdog
					// whose renewal failed: no clock ran out, the client
					// learned it.
					skipped.Reason = "lost"
				}
				w.Record(wl.name, skipped)
			} else if !wl.writes() {
				// A reader, or a semaphore's holder: it reads only.
			} else if ok, err := wl.inv.Write(p, v-1, v, lease.FencingToken); err == nil && !ok {
				w.Record(wl.name, event.Event{Kind: event.WriteRejected, Client: wl.name, LockValue: lease.LockValue, FencingToken: lease.FencingToken})
			}
		}
		wl.rec.stop(wl.name, "release")
		if err := wl.lock.Release(env, lease); err != nil {
			w.Record(wl.name, event.Event{Kind: event.ReleaseFailed, Client: wl.name, LockValue: lease.LockValue, Reason: err.Error()})
		}
		p.Sleep(scenarios.Draw(w.Rand(), wl.sc.Clients.Think))
	}
}

// acquire calls the lock for the cycle and lets it wait, retry and give
// up as it is written to: the workload never retries a give-up, nor waits
// for an error with the lock's own wait policy (issue 31). It returns the
// lease, or nil when the lock's wait policy gave up (ErrNotAcquired: its
// attempts ran out with the lock busy): the cycle then goes without the
// lock and its want ends "gave up", as an application whose lock call
// answered "busy" skips the job, which another worker is doing.
//
// Any other error (a lost reply, a refused connection, READONLY from a
// demoted master) is the lock's answer as well and is recorded as it is,
// but it says nothing of another holder: the application still has the
// job to do and retries it, after its own think time (clients.think), not
// after the lock's wait delay. That retry is a new call of the lock, so a
// lock that retries an error itself (with its delay, backoff or attempts)
// behaves differently from one that reports it; the want stays open across
// the retry, so the stretch counts for liveness as before. A cycle is one
// job: it ends with a hold or a give-up, and errors do not use cycles up.
//
// A hidden algorithm's (a user's own lock under locktest) every error
// comes back as ErrNotAcquired, busy or not: it is retried here after the
// wait delay, as before.
func (wl *workload) acquire(p *sim.Process, env algorithms.Env) *algorithms.Lease {
	w := p.World()
	for {
		call := w.Now()
		l, err := wl.lock.Acquire(env)
		switch {
		case err == nil:
			wl.held(w, call, l)
			return l
		case wl.ownPolicy && errors.Is(err, algorithms.ErrNotAcquired):
			w.Record(wl.name, event.Event{Kind: event.AcquireGaveUp, Client: wl.name, Reason: err.Error()})
			wl.rec.endWant(wl.name, "gave up", w.Now())
			return nil
		case wl.ownPolicy:
			w.Record(wl.name, event.Event{Kind: event.AcquireFailed, Client: wl.name, Reason: err.Error()})
			p.Sleep(scenarios.Draw(w.Rand(), wl.sc.Clients.Think))
		default:
			w.Record(wl.name, event.Event{Kind: event.AcquireFailed, Client: wl.name, Reason: err.Error()})
			p.Sleep(wl.sc.Wait.Delay.D() + scenarios.Draw(w.Rand(), scenarios.Range{Max: wl.sc.Wait.Jitter.D()}))
		}
	}
}

// held records a hold that began: the interval, and the hooks that end it
// when the lease is lost.
func (wl *workload) held(w *sim.World, call time.Duration, l *algorithms.Lease) {
	wl.rec.acquired(wl.name, call, l)
	name := wl.name
	l.WhenLost(func() {
		w.Record(name, event.Event{Kind: event.HoldLost, Client: name, LockValue: l.LockValue, FencingToken: l.FencingToken})
		wl.rec.stop(name, "lost")
	})
	l.WhenRenewalFails(func(err error) {
		w.Record(name, event.Event{Kind: event.RenewalFailed, Client: name, LockValue: l.LockValue, Reason: err.Error()})
	})
	w.Record(wl.name, holdBegan(wl.name, l))
}

// work is the critical section's work: d, with the nested section of
// clients.reenter after its After (the section then lasts d + Hold).
func (wl *workload) work(p *sim.Process, env algorithms.Env, d time.Duration) {
	re := wl.sc.Clients.Reenter
	if re == nil {
		p.Sleep(d)
		return
	}
	w := p.World()
	after := min(re.After.D(), d)
	p.Sleep(after)
	inner, err := wl.lock.Acquire(env)
	if err != nil {
		w.Record(wl.name, event.Event{Kind: event.AcquireFailed, Client: wl.name, Reason: "nested call: " + err.Error()})
	} else {
		w.Record(wl.name, event.Event{Kind: event.Reentered, Client: wl.name, Resource: inner.Resource, LockValue: inner.LockValue})
		p.Sleep(re.Hold.D())
		if err := wl.lock.Release(env, inner); err != nil {
			w.Record(wl.name, event.Event{Kind: event.ReleaseFailed, Client: wl.name, LockValue: inner.LockValue, Reason: "nested call: " + err.Error()})
		}
		w.Record(wl.name, event.Event{Kind: event.ReentryReleased, Client: wl.name, Resource: inner.Resource, LockValue: inner.LockValue})
	}
	p.Sleep(d - after)
}

// writes reports whether the client writes the resource: readers of a
// reader-writer lock and holders of a semaphore's permits only read it.
func (wl *workload) writes() bool {
	return wl.sc.ModeOf(wl.name) != scenarios.ModeRead && wl.sc.Clients.Permits <= 1
}

// withModes marks each hold and want with its client's declared mode, so
// the checker knows a reader's hold from a writer's.
func withModes(sc *scenarios.Scenario, iv []checker.Interval, wants []checker.Want) ([]checker.Interval, []checker.Want) {
	for i := range iv {
		iv[i].Mode = sc.ModeOf(iv[i].Client)
	}
	for i := range wants {
		wants[i].Mode = sc.ModeOf(wants[i].Client)
	}
	return iv, wants
}
