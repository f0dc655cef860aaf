package sim

import (
	"context"
	"fmt"
	"github.com/locklab/locklab/sim/event"
	"math/rand/v2"
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
	h.w.rt.thaw(h)
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
	h.w.rt.crashed(h)
	h.w.hostChanged(h, HostCrashed)
}

// Process is one simulated thread of control on a host. Algorithm code runs
// inside a process as ordinary sequential Go; every blocking call it makes
// (network I/O, Sleep) parks the process and returns the baton to the world.
type Process struct {
	Name string
	Host *Host

	w *World
	// Under the kernel the process is a coroutine (kernel.go).
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
	w.rt.start(p, fn)
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
func (p *Process) Context() context.Context { return p.w.rt.context(p.Host) }

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
func (p *Process) park() { p.w.rt.park(p) }

// parkIdle is park for the kernel's own waits, with nothing of the caller's
// on the stack to unwind: it reports false when the process was killed, and
// the caller returns, so the kill needs no Goexit (and no goroutine to
// absorb it). In a bubble it is park.
func (p *Process) parkIdle() bool { return p.w.rt.parkIdle(p) }

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
// until p parks or ends. A wake-up for a paused host is held for Resume;
// one for a hung process waits for Unhang.
func (w *World) wakeup(p *Process, id uint64) {
	if p.done || !p.parked || p.parkID != id {
		return
	}
	if p.Host.paused {
		w.rt.holdWake(p, id)
		return
	}
	if p.frozen {
		p.frozenWake = true
		return
	}
	w.rt.wake(p)
}

// kill ends a parked process: it wakes up inside park and exits.
func (w *World) kill(p *Process) {
	if p.done {
		return
	}
	w.rt.kill(p)
}

// Current is the process holding the baton, or nil inside a plain event.
func (w *World) Current() *Process { return w.current }

// Inside runs fn back inside the kernel from the code Outside runs (a
// user's lock calling a simulated service whose calls park the process,
// as sim/fsnode's file API does). Called anywhere else it just calls fn.
func (p *Process) Inside(fn func()) {
	entered := p.w.rt.insideBegin(p)
	fn()
	if entered {
		p.w.rt.insideEnd(p)
	}
}

// Outside runs fn — the lock's own code — outside the kernel: in a bubble
// the process gives the kernel up while fn runs, so the goroutines fn starts
// can enter it. If the host crashed or the run ended meanwhile, the process
// ends when fn returns. Outside a bubble it just calls fn.
func (p *Process) Outside(fn func()) {
	p.w.rt.outsideBegin(p)
	fn()
	p.w.rt.outsideEnd(p)
}

// Notify runs fn inside the kernel on behalf of a goroutine of the lock's
// code (who names it in event keys), for a harness goroutine that reports
// what the lock told it — for example that it lost its lease. Outside a
// bubble it just calls fn.
func (w *World) Notify(who string, fn func()) { w.notifyFrom(nil, "", who, false, fn) }
