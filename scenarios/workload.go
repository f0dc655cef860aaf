package scenarios

import (
	"errors"
	"github.com/locklab/locklab/sim/event"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/sim"
)

// workload is one client's life: lock cycles around a read-modify-write of
// the protected resource.
type workload struct {
	sc   *Scenario
	name string
	lock algorithms.Lock
	inv  *sim.Inventory
	rec  *recorder
	over Client
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
	// A user's own lock (a hidden algorithm: scenarios/locktest) reports
	// every failed Lock call as ErrNotAcquired, busy or not, so its
	// give-ups cannot be told from errors yet: the workload goes on
	// retrying it as before.
	info, _ := algorithms.Lookup(wl.sc.Algorithm)
	ownPolicy := !info.Hidden
	for c := 0; c < cycles; c++ {
		wl.rec.want(wl.name)
		var lease *algorithms.Lease
		gaveUp := false
		for lease == nil && !gaveUp {
			call := w.Now()
			l, err := wl.lock.Acquire(env)
			if ownPolicy && errors.Is(err, algorithms.ErrNotAcquired) {
				// The lock's own wait policy gave up (its attempts ran
				// out): the cycle goes without the lock, as an
				// application whose lock call returned "busy" would; the
				// workload does not retry it behind the policy's back
				// (issue 31), so a policy's attempts can change a verdict.
				w.Record(wl.name, event.Event{Kind: event.AcquireGaveUp, Client: wl.name, Reason: err.Error()})
				wl.rec.endWant(wl.name, "gave up", w.Now())
				gaveUp = true
				continue
			}
			if err != nil {
				w.Record(wl.name, event.Event{Kind: event.AcquireFailed, Client: wl.name, Reason: err.Error()})
				p.Sleep(wl.sc.Wait.Delay.D() + draw(w.Rand(), Range{Max: wl.sc.Wait.Jitter.D()}))
				continue
			}
			lease = l
			wl.rec.acquired(wl.name, call, l)
			name := wl.name
			l.WhenLost(func() {
				w.Record(name, event.Event{Kind: event.HoldLost, Client: name, Token: l.Token, Fence: l.Fence})
				wl.rec.stop(name, "lost")
			})
			l.WhenRenewalFails(func(err error) {
				w.Record(name, event.Event{Kind: event.RenewalFailed, Client: name, Token: l.Token, Reason: err.Error()})
			})
			w.Record(wl.name, holdBegan(wl.name, l))
		}
		if gaveUp {
			p.Sleep(draw(w.Rand(), wl.sc.Clients.Think))
			continue
		}
		if v, err := wl.inv.Read(p, lease.Fence); err == nil {
			wl.work(p, env, draw(w.Rand(), work))
			if (wl.sc.Clients.CheckValidity || lease.Lost()) && !lease.Valid(env.Now()) {
				// The client consults its lease and stops acting: its hold
				// ends here, at the check, not at the deadline it passed.
				wl.rec.stop(wl.name, "validity")
				skipped := event.Event{Kind: event.WriteSkipped, Client: wl.name, Token: lease.Token, Fence: lease.Fence}
				if lease.Lost() {
					// A ZooKeeper holder told SUSPENDED or LOST, a watchdog
					// whose renewal failed: no clock ran out, the client
					// learned it.
					skipped.Reason = "lost"
				}
				w.Record(wl.name, skipped)
			} else if !wl.writes() {
				// A reader, or a semaphore's holder: it reads only.
			} else if ok, err := wl.inv.Write(p, v-1, v, lease.Fence); err == nil && !ok {
				w.Record(wl.name, event.Event{Kind: event.WriteRejected, Client: wl.name, Token: lease.Token, Fence: lease.Fence})
			}
		}
		wl.rec.stop(wl.name, "release")
		if err := wl.lock.Release(env, lease); err != nil {
			w.Record(wl.name, event.Event{Kind: event.ReleaseFailed, Client: wl.name, Token: lease.Token, Reason: err.Error()})
		}
		p.Sleep(draw(w.Rand(), wl.sc.Clients.Think))
	}
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
		w.Record(wl.name, event.Event{Kind: event.Reentered, Client: wl.name, Resource: inner.Resource, Token: inner.Token})
		p.Sleep(re.Hold.D())
		if err := wl.lock.Release(env, inner); err != nil {
			w.Record(wl.name, event.Event{Kind: event.ReleaseFailed, Client: wl.name, Token: inner.Token, Reason: "nested call: " + err.Error()})
		}
		w.Record(wl.name, event.Event{Kind: event.ReentryReleased, Client: wl.name, Resource: inner.Resource, Token: inner.Token})
	}
	p.Sleep(d - after)
}

// writes reports whether the client writes the resource: readers of a
// reader-writer lock and holders of a semaphore's permits only read it.
func (wl *workload) writes() bool {
	return wl.sc.ModeOf(wl.name) != ModeRead && wl.sc.Clients.Permits <= 1
}

// withModes marks each hold and want with its client's declared mode, so
// the checker knows a reader's hold from a writer's.
func withModes(sc *Scenario, iv []checker.Interval, wants []checker.Want) ([]checker.Interval, []checker.Want) {
	for i := range iv {
		iv[i].Mode = sc.ModeOf(iv[i].Client)
	}
	for i := range wants {
		wants[i].Mode = sc.ModeOf(wants[i].Client)
	}
	return iv, wants
}
