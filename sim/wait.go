package sim

import "time"

// NoTimeout makes Waiter.Wait wait until it is signalled, however long.
const NoTimeout time.Duration = -1

// Waiter is a condition that simulated processes wait on, the kernel's
// counterpart of sync.Cond: Wait parks the calling process (handing the
// baton back to the world) until another process or an event calls Signal or
// Broadcast, or until a timeout measured on the process's own oscillator
// passes. A signal sent while nobody waits is not remembered, so callers keep
// their condition in ordinary variables and loop:
//
//	for !ready {
//		if !cond.Wait(p, timeout) {
//			return errTimeout
//		}
//	}
//
// Everything runs under the baton, so no lock is needed. Signal and
// Broadcast may be called from a running process or from a plain event (a
// message arriving); the wake-ups they cause are scheduled at the current
// instant, in the order of the waits, so a run stays deterministic. A
// wake-up aimed at a paused host is held back until it resumes, as every
// other wake-up is. The zero value is ready to use.
type Waiter struct {
	waiting []*waitEntry
}

type waitEntry struct {
	p         *Process
	id        uint64
	signalled bool
}

// Wait parks p until the waiter is signalled (it returns true) or timeout
// passes on p's host oscillator (it returns false). A negative timeout
// (NoTimeout) waits until signalled.
func (wt *Waiter) Wait(p *Process, timeout time.Duration) bool {
	w := p.w
	id := p.prepark()
	e := &waitEntry{p: p, id: id}
	wt.waiting = append(wt.waiting, e)
	defer wt.remove(e) // also when the process is killed while waiting
	var timer *Event
	if timeout >= 0 {
		timer = w.wakeAt(w.Later(p.Host.Clock.TrueDuration(w.now, timeout)), p, id)
	}
	p.park()
	timer.Cancel()
	return e.signalled
}

// Signal wakes the process that has waited longest, if any, and reports
// whether there was one.
func (wt *Waiter) Signal() bool {
	for len(wt.waiting) > 0 {
		e := wt.waiting[0]
		wt.waiting = wt.waiting[1:]
		if e.p.done {
			continue
		}
		wake(e)
		return true
	}
	return false
}

// Broadcast wakes every waiting process and returns how many it woke.
func (wt *Waiter) Broadcast() int {
	all := wt.waiting
	wt.waiting = nil
	n := 0
	for _, e := range all {
		if e.p.done {
			continue
		}
		wake(e)
		n++
	}
	return n
}

// Waiting is the number of processes waiting now.
func (wt *Waiter) Waiting() int { return len(wt.waiting) }

func wake(e *waitEntry) {
	e.signalled = true
	p, id := e.p, e.id
	p.w.wakeAt(p.w.now, p, id)
}

func (wt *Waiter) remove(e *waitEntry) {
	for i, x := range wt.waiting {
		if x == e {
			wt.waiting = append(wt.waiting[:i:i], wt.waiting[i+1:]...)
			return
		}
	}
}
