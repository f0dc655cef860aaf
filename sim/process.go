package sim

import (
	"context"
	"fmt"
	"github.com/locklab/locklab/sim/event"
	"iter"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"time"
)

// Host is a simulated machine: a name on the network, a local clock, and the
// processes running on it. Pauses (a stop-the-world GC, SIGSTOP, a VM
// migration) and crashes act on a whole host, as they do on a real OS process.
type Host struct {
	Name  string
	Clock *Clock

	w       *World
	procs   []*Process
	paused  bool
	crashed bool
	pending []*Process // processes whose wake-up arrived during a pause
	// In a bubble: the host's work held during a pause (freeze.go).
	held    []heldWork
	heldSeq uint64
}

// NewHost adds a machine to the world.
func (w *World) NewHost(name string, clock *Clock) *Host {
	if clock == nil {
		clock = NewClock(0, 0)
	}
	h := &Host{Name: name, Clock: clock, w: w}
	if w.hosts == nil {
		w.hosts = map[string]*Host{}
	}
	w.hosts[name] = h
	return h
}

// Paused reports whether the host is paused now.
func (h *Host) Paused() bool { return h.paused }

// Crashed reports whether the host has crashed.
func (h *Host) Crashed() bool { return h.crashed }

// Pause stops every process on the host from running until Resume. A wake-up
// that falls inside the pause (a reply, a timer) is held back and delivered on
// Resume, which is how a paused process "wakes up and carries on" as in
// Kleppmann's GC-pause example.
func (h *Host) Pause() {
	if h.crashed || h.paused {
		return
	}
	h.paused = true
	h.w.Record(h.Name, event.Event{Kind: event.HostPaused})
	h.w.hostChanged(h, HostPaused)
}

// Resume ends a pause.
func (h *Host) Resume() {
	if !h.paused {
		return
	}
	h.paused = false
	h.w.Record(h.Name, event.Event{Kind: event.HostResumed})
	pending := h.pending
	h.pending = nil
	if h.w.b != nil {
		// Stop-the-world: everything the host held runs now, in the
		// order freeze.go gives.
		h.thaw()
	}
	h.w.hostChanged(h, HostResumed)
	for _, p := range pending {
		id := p.parkID
		h.w.wakeAt(h.w.now, p, id)
	}
}

// Crash kills every process on the host at once.
func (h *Host) Crash() {
	if h.crashed {
		return
	}
	h.crashed = true
	h.w.Record(h.Name, event.Event{Kind: event.HostCrashed})
	for _, p := range h.procs {
		if !p.done {
			p.crashed = true
			h.w.kill(p)
		}
	}
	if h.w.b != nil {
		h.w.bubbleCrash(h)
	}
	h.w.hostChanged(h, HostCrashed)
}

// Process is one simulated thread of control on a host. Algorithm code runs
// inside a process as ordinary sequential Go; every blocking call it makes
// (network I/O, Sleep) parks the process and returns the baton to the world.
type Process struct {
	Name string
	Host *Host

	w *World
	// Outside a bubble the process is a coroutine (iter.Pull): resume
	// switches from the scheduler straight to the process's goroutine and
	// yield straight back, one runtime coroswitch each way instead of two
	// channel hand-offs, each of which parks one goroutine and readies the
	// other through the scheduler (issue 24).
	resume  func() (struct{}, bool)
	yield   func(struct{}) bool
	started bool
	// idle is set while the process waits in the kernel's own loop (a
	// Parallel helper between jobs), where a kill returns instead of
	// unwinding with runtime.Goexit.
	idle bool
	// In a bubble (bubble.go): the channel its wake-ups arrive on.
	wake       chan struct{}
	parked     bool
	parkID     uint64
	done       bool
	killed     bool
	exiting    bool
	crashed    bool
	background bool
	helpers    []*helper
	frozen     bool
	frozenWake bool
	onExit     []func()
	// In a bubble (bubble.go): the process's own random source, whether
	// it holds the kernel, and whether it is inside the lock's code.
	rng      *rand.Rand
	inKernel bool
	outside  bool
}

// Spawn starts fn as a new process on host h at true time start.
func (h *Host) Spawn(name string, start time.Duration, fn func(p *Process)) *Process {
	w := h.w
	p := &Process{Name: name, Host: h, w: w, parked: true}
	h.procs = append(h.procs, p)
	w.procs = append(w.procs, p)
	w.live++
	if w.b != nil {
		p.wake = make(chan struct{}, 1)
		p.rng = w.contentRand("process " + name)
		w.b.running++
		go p.bubbleMain(fn)
	} else {
		p.resume, _ = iter.Pull(func(yield func(struct{}) bool) {
			p.yield = yield
			p.main(fn)
		})
	}
	id := p.parkID
	w.wakeAt(start, p, id)
	return p
}

// Background marks the process as one that does not keep the world running
// (a heartbeat or a watchdog): Run stops once only background processes remain.
func (p *Process) Background() *Process {
	if !p.background && !p.done {
		p.w.live--
	}
	p.background = true
	return p
}

// main is the body of the process's coroutine: the first resume starts it.
// When it returns, the coroutine ends and resume returns to the scheduler.
// A process unwinding with runtime.Goexit (a kill, or fn calling Goexit
// itself) is different: iter.Pull re-raises the Goexit in whichever
// goroutine called resume, so World.kill resumes a doomed process from a
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
// called runtime.Goexit (a t.FailNow inside a process): outside the
// coroutine kernel that ended the process's goroutine and the run went on,
// and so it must here, where the Goexit would otherwise reach the
// scheduler's goroutine. The coroutine hands the baton back with the Goexit
// still pending and is finished by shutdown, from a goroutine of its own.
func (p *Process) goexitFromFn() {
	p.w.zombies = append(p.w.zombies, p)
	p.yield(struct{}{})
}

// OnExit registers fn to run when the process ends, however it ends.
func (p *Process) OnExit(fn func()) { p.onExit = append(p.onExit, fn) }

// Done reports whether the process has ended.
func (p *Process) Done() bool { return p.done }

// Crashed reports whether the process ended because its host crashed.
func (p *Process) Crashed() bool { return p.crashed }

// World returns the process's world.
func (p *Process) World() *World { return p.w }

// Now is the process's local wall-clock reading (its host's clock).
func (p *Process) Now() time.Time { return p.Host.Clock.Time(p.w.now) }

// TrueNow is true time; only the kernel, workloads and checkers may look at it.
func (p *Process) TrueNow() time.Duration { return p.w.now }

// Rand is the world's random source (the process holds the baton).
func (p *Process) Rand() *rand.Rand { return p.w.rng }

// Sleep blocks the process for d as measured by its host's oscillator (a
// monotonic sleep: wall-clock jumps do not shorten it, rate drift does).
func (p *Process) Sleep(d time.Duration) {
	if d < 0 {
		d = 0
	}
	id := p.prepark()
	p.w.wakeAt(p.w.Later(p.Host.Clock.TrueDuration(p.w.now, d)), p, id)
	p.park()
}

// Context returns a context for go-redis calls. It carries no deadline: time
// inside a simulation is the kernel's, never the context package's.
// In a bubble it is cancelled when the host crashes or the run ends, so that
// a library's background goroutines can stop.
func (p *Process) Context() context.Context {
	if p.w.b != nil {
		return p.w.hostState(p.Host).ctx
	}
	return context.Background()
}

// Go starts fn as a child process on the same host, at the current instant.
func (p *Process) Go(name string, fn func(c *Process)) *Process {
	return p.Host.Spawn(name, p.w.now, fn)
}

// Parallel runs fns concurrently on the same host and waits for all of
// them. Redlock uses it to ask N nodes at once. The i-th function runs on
// the process's i-th helper, created on first use and kept: a fresh
// goroutine for every request would grow its stack through go-redis each
// time, which dominated the cost of exploring Redlock.
func (p *Process) Parallel(name string, fns ...func(c *Process)) {
	remaining := len(fns)
	if remaining == 0 {
		return
	}
	w := p.w
	// One record per call, shared by its helpers, instead of a closure per
	// helper (issue 24): a killed caller that calls Parallel again while
	// unwinding gets a fresh count.
	call := &parallelCall{p: p, id: p.prepark(), remaining: remaining}
	for i, fn := range fns {
		h := p.helper(i, name)
		h.job = fn
		h.call = call
		w.wakeAt(w.now, h.p, h.idle)
	}
	p.park()
}

// parallelCall is one Parallel call: the caller parked with id waits for
// remaining helpers.
type parallelCall struct {
	p         *Process
	id        uint64
	remaining int
}

// done is a helper's job ending: the last one wakes the caller.
func (c *parallelCall) done() {
	c.remaining--
	if c.remaining == 0 {
		c.p.w.wakeAt(c.p.w.now, c.p, c.id)
	}
}

// helper is a child process that runs one job of Parallel at a time.
type helper struct {
	p    *Process
	idle uint64 // park id while waiting for a job
	job  func(c *Process)
	call *parallelCall
}

func (p *Process) helper(i int, name string) *helper {
	for len(p.helpers) <= i {
		h := &helper{}
		h.p = p.Host.Spawn(fmt.Sprintf("%s/%s%d", p.Name, name, len(p.helpers)), p.w.now, func(c *Process) {
			for {
				h.idle = c.prepark()
				if !c.parkIdle() {
					return // killed between jobs
				}
				job, call := h.job, h.call
				h.job, h.call = nil, nil
				if job != nil {
					job(c)
					call.done()
				}
			}
		}).Background()
		// The helper parks for its first job at its start event, which
		// comes before any job's wake-up event at the same instant.
		h.idle = h.p.parkID + 1
		p.helpers = append(p.helpers, h)
	}
	return p.helpers[i]
}

// prepark opens a new wait: wake-ups carrying an older id are ignored.
func (p *Process) prepark() uint64 {
	p.parkID++
	return p.parkID
}

// park hands the baton back to the scheduler until a wake-up with the current
// id. A killed process unwinds with runtime.Goexit; if code deferred during
// that unwinding blocks again, it returns at once so the unwinding completes.
func (p *Process) park() {
	if p.w.b != nil {
		p.bubblePark()
		return
	}
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

// parkIdle is park for the kernel's own waits, with nothing of the caller's
// on the stack to unwind: it reports false when the process was killed, and
// the caller returns, so the kill needs no Goexit (and no goroutine to
// absorb it). In a bubble it is park.
func (p *Process) parkIdle() bool {
	if p.w.b != nil {
		p.bubblePark()
		return true
	}
	if p.exiting {
		return false
	}
	p.parked = true
	p.idle = true
	p.yield(struct{}{})
	p.idle = false
	return !p.killed
}

// Hang freezes this one process (a worker stuck in a deadlock or an endless
// loop) while the other processes of its host — a lock's watchdog — go on.
func (p *Process) Hang() {
	if p.done || p.frozen {
		return
	}
	p.frozen = true
	p.w.Record(p.Name, event.Event{Kind: event.ProcessHung})
}

// Unhang lets a hung process continue; a wake-up that arrived meanwhile is
// delivered now.
func (p *Process) Unhang() {
	if !p.frozen {
		return
	}
	p.frozen = false
	p.w.Record(p.Name, event.Event{Kind: event.ProcessContinued})
	if p.frozenWake {
		p.frozenWake = false
		id := p.parkID
		p.w.wakeAt(p.w.now, p, id)
	}
}

// Main is the host's first process (a client's workload), or nil.
func (h *Host) Main() *Process {
	if len(h.procs) == 0 {
		return nil
	}
	return h.procs[0]
}

// GoBackground starts fn as a child process that does not keep the world
// running (a lock's watchdog); it is killed when the run ends.
func (p *Process) GoBackground(name string, fn func(c *Process)) *Process {
	return p.Host.Spawn(p.Name+"/"+name, p.w.now, fn).Background()
}

// Killed reports whether the process is unwinding after a kill.
func (p *Process) Killed() bool { return p.killed }

// wakeup runs on the scheduler goroutine: it hands the baton to p and waits
// until p parks or ends.
func (w *World) wakeup(p *Process, id uint64) {
	if p.done || !p.parked || p.parkID != id {
		return
	}
	if p.Host.paused {
		if w.b != nil {
			// Held with the rest of the host's work (freeze.go), in the
			// order it would have happened.
			p.Host.hold(func() { w.wakeup(p, id) })
			return
		}
		p.Host.pending = append(p.Host.pending, p)
		return
	}
	if p.frozen {
		p.frozenWake = true
		return
	}
	if w.b != nil {
		w.bubbleWake(p)
		return
	}
	p.parked = false
	prev := w.current
	w.current = p
	p.resume()
	w.current = prev
}

// kill ends a parked process: it wakes up inside park and exits.
func (w *World) kill(p *Process) {
	if p.done {
		return
	}
	if w.b != nil {
		w.bubbleKill(p)
		return
	}
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

// Current is the process holding the baton, or nil inside a plain event.
func (w *World) Current() *Process { return w.current }
