package sim

// The bubble's loop (bubble.go): one event at a time, a synctest.Wait
// after each, virtual time moved by the kernel's own timer; and the end of
// a run, which waits for the lock's goroutines to return.

import (
	"container/heap"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing/synctest"
	"time"
)

// windDown is how long the kernel waits, after a run ends, for the lock's
// goroutines to return; they see failing connections and a cancelled
// context, so a well-behaved lock returns in a few of its retry delays.
const windDown = 10 * time.Minute

// run is World.Run inside a bubble.
func (b *bubble) run(limit time.Duration) error {
	w := b.w
	b.mu.Lock()
	sameInstant, lastAt := 0, time.Duration(-1)
	// One timer for every sleep of the run: a new one per sleep was a
	// sixth of a redsync run's allocations (issue 39). Since Go 1.23 a
	// stopped timer delivers no stale tick, so Reset is a fresh timer.
	sleep := time.NewTimer(time.Hour)
	sleep.Stop()
	defer sleep.Stop()
	for {
		b.mu.Unlock()
		synctest.Wait()
		b.mu.Lock()
		b.Steps.Add(1)
		BubbleProgress.Add(1)
		w.Trace.flush()
		if v := b.virtualNow(); v > w.now {
			w.now = v
		}
		if w.failure != nil || w.stopped || w.allProcessesDone() {
			break
		}
		for w.queue.Len() > 0 && w.queue[0].cancelled {
			heap.Pop(&w.queue)
		}
		target := limit
		if w.queue.Len() > 0 && w.queue[0].At < target {
			target = w.queue[0].At
		}
		if w.now < target {
			b.waitingFor = target
			d := target - w.now
			b.mu.Unlock()
			sleep.Reset(d)
			select {
			case <-sleep.C:
			case <-b.kick:
			}
			sleep.Stop()
			b.mu.Lock()
			b.waitingFor = -1
			continue
		}
		if w.queue.Len() == 0 || w.queue[0].At > limit {
			break
		}
		// The work budget and the same-instant bound end the run here, as
		// its duration would (budget.go).
		if w.overBudget() {
			w.cutShort(LimitWork, w.workLimit)
			break
		}
		e := heap.Pop(&w.queue).(*Event)
		// Compared with the previous event's time, not with w.now: the
		// kernel has just slept until e.At, so w.now always equals it, and
		// every event of a run counted as one instant (a herd of 1000
		// gozk-simple clients was cut at 1.05 s for "1000000 events at
		// one instant" that were spread over a second).
		if e.At == lastAt {
			if sameInstant++; sameInstant > w.instantLimit {
				w.cutShort(LimitSameInstant, int64(w.instantLimit))
				break
			}
		} else {
			sameInstant, lastAt = 0, e.At
		}
		w.now = e.At
		e.fire(w)
	}
	b.end()
	b.mu.Unlock()
	return w.failure
}

// end ends the run (kernel held): every connection fails, every host's
// context is cancelled, every process ends; then it waits, in virtual
// time, for the goroutines to return.
func (b *bubble) end() {
	w := b.w
	end := w.now
	b.ended = true
	w.runEndHooks()
	for _, h := range b.hostOrder() {
		b.hostState(h).cancel()
		h.dropHeld()
	}
	// A host with no process and no Redis connection (a database
	// server, a service's own host) may have goroutines at its gate too.
	for _, name := range slices.Sorted(maps.Keys(w.hosts)) {
		w.hosts[name].dropHeld()
	}
	for _, c := range b.conns {
		c.signal()
	}
	for _, p := range w.procs {
		b.kill(p)
	}
	for waited := time.Duration(0); ; waited += time.Second {
		b.mu.Unlock()
		synctest.Wait()
		b.mu.Lock()
		b.Steps.Add(1)
		BubbleProgress.Add(1)
		w.Trace.flush()
		if b.running == 0 && w.endWaitsLeft() == 0 {
			break
		}
		if waited >= windDown {
			if n := w.endWaitsLeft(); b.running == 0 {
				w.Fail(fmt.Errorf("%d goroutines closing a service's clients did not return within %v of simulated time after the run ended at %v. Blocked:\n%s",
					n, windDown, end, BlockedGoroutines(true)))
				break
			}
			var stuck []string
			for _, p := range w.procs {
				if p.outside {
					stuck = append(stuck, p.Name)
				}
			}
			w.Fail(fmt.Errorf("the lock's code did not return within %v of simulated time after the run ended at %v (processes %s): it waits on something the simulation does not control — a channel, a mutex, or a goroutine of its own that never ends; stop background goroutines when the context is cancelled or a command fails. Blocked:\n%s",
				windDown, end, strings.Join(stuck, ", "), BlockedGoroutines(true)))
			break
		}
		b.mu.Unlock()
		time.Sleep(time.Second)
		b.mu.Lock()
	}
	w.now = end
}

// hostOrder lists the hosts with bubble state in a fixed order.
func (b *bubble) hostOrder() []*Host {
	w := b.w
	var out []*Host
	seen := map[*Host]bool{}
	for _, p := range w.procs {
		if !seen[p.Host] {
			seen[p.Host] = true
			out = append(out, p.Host)
		}
	}
	for _, c := range b.conns {
		if !seen[c.host] {
			seen[c.host] = true
			out = append(out, c.host)
		}
	}
	return out
}
