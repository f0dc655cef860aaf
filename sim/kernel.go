package sim

// The coroutine kernel: the runtime New installs (runtime.go). Exactly one
// process runs at any moment, as a coroutine (iter.Pull) the scheduler
// resumes at the process's wake-up event and that yields back when it
// parks; nothing else runs meanwhile, so the queue's order is the run's
// order and events need no key of their own.

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// kernel is the coroutine runtime of one world.
type kernel struct{ w *World }

// run executes events in (time, sequence) order; World.Run says when it
// stops.
func (k *kernel) run(limit time.Duration) error {
	w := k.w
	sameInstant := 0
	for w.queue.Len() > 0 && w.failure == nil && !w.stopped {
		if w.overBudget() {
			w.cutShort(LimitWork, w.workLimit)
			break
		}
		e := w.queue.pop()
		if e.cancelled {
			continue
		}
		if e.At > limit {
			w.now = limit
			break
		}
		// A process that retries with no delay over a network with no
		// latency would spin forever at one instant: the run ends there.
		if e.At == w.now {
			if sameInstant++; sameInstant > w.instantLimit {
				w.cutShort(LimitSameInstant, int64(w.instantLimit))
				break
			}
		} else {
			sameInstant = 0
		}
		w.now = e.At
		e.fire(w)
		if w.allProcessesDone() {
			if !w.draining {
				w.draining = true
				w.Net.markQuiet()
			}
			if w.Net.settled() {
				break
			}
		}
	}
	w.runEndHooks()
	return w.failure
}

// shutdown kills the processes still parked, one at a time, and waits for
// each goroutine to unwind, then finishes the processes whose own code
// called runtime.Goexit.
func (k *kernel) shutdown() {
	w := k.w
	for _, p := range w.procs {
		if !p.done {
			w.kill(p)
		}
	}
	for _, p := range w.zombies {
		resumeDoomed(p)
	}
	w.zombies = nil
}

// queued leaves every key as it is ("" for At's): one instant's events
// run in the order they were scheduled, which the baton makes
// deterministic.
func (k *kernel) queued(*Event, bool) {}

// start makes p a coroutine: resume switches from the scheduler straight
// to the process's goroutine and yield straight back, one runtime
// coroswitch each way instead of two channel hand-offs, each of which
// parks one goroutine and readies the other through the scheduler (issue
// 24).
func (k *kernel) start(p *Process, fn func(p *Process)) {
	p.resume, _ = iter.Pull(func(yield func(struct{}) bool) {
		p.yield = yield
		p.main(fn)
	})
}

// main is the body of the process's coroutine: the first resume starts it.
// When it returns, the coroutine ends and resume returns to the scheduler.
// A process unwinding with runtime.Goexit (a kill, or fn calling Goexit
// itself) is different: iter.Pull re-raises the Goexit in whichever
// goroutine called resume, so kill resumes a doomed process from a
// goroutine of its own, and a Goexit that fn starts parks its coroutine for
// good at the end of the unwinding (goexitFromFn), to be finished at
// shutdown.
func (p *Process) main(fn func(p *Process)) {
	p.started = true
	returned := false
	defer func() {
		r := recover()
		if r != nil {
			p.w.Fail(fmt.Errorf("process %s panicked: %v\n%s", p.Name, r, debug.Stack()))
		}
		p.done = true
		p.parked = false
		if !p.background {
			p.w.live--
		}
		for _, f := range p.onExit {
			f()
		}
		if r == nil && !returned && !p.killed {
			p.goexitFromFn()
		}
	}()
	if p.killed {
		returned = true
		return
	}
	fn(p)
	returned = true
}

// goexitFromFn runs at the end of the unwinding of a process whose own code
// called runtime.Goexit (a t.FailNow inside a process): in the bubble that
// ends the process's goroutine and the run goes on, and so it must here,
// where the Goexit would otherwise reach the scheduler's goroutine. The
// coroutine hands the baton back with the Goexit still pending and is
// finished by shutdown, from a goroutine of its own.
func (p *Process) goexitFromFn() {
	p.w.zombies = append(p.w.zombies, p)
	p.yield(struct{}{})
}

// park yields to the scheduler until a wake-up with the current id. A
// killed process unwinds with runtime.Goexit; if code deferred during that
// unwinding blocks again, it returns at once so the unwinding completes.
func (k *kernel) park(p *Process) {
	if p.exiting {
		return
	}
	p.parked = true
	p.yield(struct{}{})
	if p.killed {
		p.exiting = true
		runtime.Goexit()
	}
}

// parkIdle reports false when the process was killed, and the caller
// returns, so the kill needs no Goexit (and no goroutine to absorb it).
func (k *kernel) parkIdle(p *Process) bool {
	if p.exiting {
		return false
	}
	p.parked = true
	p.idle = true
	p.yield(struct{}{})
	p.idle = false
	return !p.killed
}

// wake hands the baton to p and waits until p parks or ends.
func (k *kernel) wake(p *Process) {
	w := k.w
	p.parked = false
	prev := w.current
	w.current = p
	p.resume()
	w.current = prev
}

// kill wakes p inside park, where it exits.
func (k *kernel) kill(p *Process) {
	w := k.w
	p.killed = true
	prev := w.current
	w.current = p
	if !p.started || p.idle {
		// Nothing to unwind: main returns at once, or the helper's loop
		// returns from parkIdle.
		p.resume()
	} else {
		resumeDoomed(p)
	}
	w.current = prev
}

// resumeDoomed resumes a process that will unwind with runtime.Goexit, on
// a goroutine of its own that waits for nothing else: iter.Pull re-raises
// the Goexit in the goroutine that resumed the coroutine, and it must end
// that throwaway goroutine, not the scheduler. The channel makes the caller
// wait until the unwinding (deferred code, onExit hooks) has finished, as
// the baton requires.
func resumeDoomed(p *Process) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.resume()
	}()
	<-done
}

// holdWake keeps p in its host's pending list; Resume wakes it.
func (k *kernel) holdWake(p *Process, id uint64) {
	p.Host.pending = append(p.Host.pending, p)
}

// thaw has nothing to release: a paused host's wake-ups are pending on
// the host (holdWake), and its lock code runs only under the baton.
func (k *kernel) thaw(*Host) {}

// crashed has nothing more to do: the host's processes were killed, and
// none of its code runs outside them.
func (k *kernel) crashed(*Host) {}

// context carries no deadline and is never cancelled: time inside a
// simulation is the kernel's, never the context package's.
func (k *kernel) context(*Host) context.Context { return context.Background() }

// Lock code runs under the baton, inside the simulation: the doors are
// open, and their functions are plain calls.
func (k *kernel) outsideBegin(*Process)                                {}
func (k *kernel) outsideEnd(*Process)                                  {}
func (k *kernel) insideBegin(*Process) bool                            { return false }
func (k *kernel) insideEnd(*Process)                                   {}
func (k *kernel) notifyBegin(h *Host, name, who string, act bool) bool { return true }
func (k *kernel) notifyEnd()                                           {}
func (k *kernel) awaitThaw(h *Host, name, who string)                  {}

// message draws from the world's source, in sending order, and keys
// nothing: sending order is the run's order.
func (k *kernel) message(*Message) (string, *rand.Rand) { return "", nil }
func (k *kernel) endMessage(*rand.Rand)                 {}

// arrival keeps each direction of each connection in order.
func (k *kernel) arrival(m *Message, at time.Duration) time.Duration {
	n := k.w.Net
	fk := fifoKey{m.Conn, m.From, m.To}
	if prev := n.last[fk]; at < prev {
		at = prev // TCP keeps order within a connection
	}
	n.last[fk] = at
	return at
}

// redisClient keeps the direct path (redis_direct.go), which runs a
// command in the caller's process under the baton. With the library's
// retries, go-redis would sleep between them on the real clock (8 ms to
// 512 ms) while holding the baton: simulated time does not move, so the
// sleep changes nothing in the run and only costs wall time — a client
// whose every request is lost spent hours of it on an hour of simulated
// time (issue 25). The retries go out back to back in simulated time
// either way.
func (k *kernel) redisClient(o ClientOptions, opt *redis.Options) ClientOptions {
	if o.LibraryRetries {
		opt.MinRetryBackoff, opt.MaxRetryBackoff = -1, -1
	}
	return o
}

// redisDialer dials under the baton, in the calling process.
func (k *kernel) redisDialer(host *Host, dial func() *redisConn) func(context.Context, string, string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) { return dial(), nil }
}

func (k *kernel) dialed(*redisConn) {}

// miniredisPool is the process-wide pool: a kernel world's instances run
// no goroutine of a bubble.
func (k *kernel) miniredisPool() *sync.Pool { return &miniredisPool }

// steps is 0: no watchdog watches the kernel, whose loop never waits.
func (k *kernel) steps() uint64 { return 0 }

// virtualTime panics: no library clock is virtual under the kernel.
func (k *kernel) virtualTime(time.Duration) time.Time {
	panic("sim: BubbleTime outside a bubble (call UseBubble first)")
}
