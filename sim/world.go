// Package sim is locklab's deterministic simulation kernel.
//
// A World owns virtual true time, one event queue ordered by (time, sequence
// number), one seeded random source, and the simulated processes. Processes
// are goroutines, but exactly one of them runs at any moment: a process runs
// until it blocks on the simulated network or on a simulated sleep, then hands
// the baton back to the scheduler, which pops the next event. Nothing in a run
// reads the wall clock, touches a real socket or iterates a map, so a seed
// determines the run byte for byte; the trace (see Trace) is the proof.
package sim

import (
	"fmt"
	"github.com/locklab/locklab/sim/event"
	"math"
	"math/rand/v2"
	"time"
)

// Epoch is true time zero. Every local clock reads Epoch plus its own offset
// at the start of a run; it is fixed so that traces never depend on the day.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Event is a callback scheduled at a true time. Cancel it to make it a no-op.
type Event struct {
	At  time.Duration
	key string // orders events of one instant in a bubble (bubble.go)
	seq uint64
	fn  func()
	// wake, when set, is the process the event wakes (with wakeID) in
	// place of fn: the commonest event, scheduled without a closure.
	wake   *Process
	wakeID uint64
	// msg, when set, is the message the event lands (Network.land).
	msg       *Message
	msgID     uint64
	deliver   func()
	cancelled bool
}

// Cancel stops a pending event from running. It is safe to cancel an event
// that already ran.
func (e *Event) Cancel() {
	if e != nil {
		e.cancelled = true
	}
}

// eventQueue is a binary min-heap of events ordered by (At, key, seq): a
// strict total order (seq is unique), so the events leave it in one order
// whatever the heap's layout. The kernel pushes and pops through the typed
// push and pop below; the heap.Interface methods remain for the bubble's
// loop (bubble_run.go), and both keep the same invariant the same way.
type eventQueue []*Event

func (q eventQueue) Len() int           { return len(q) }
func (q eventQueue) Less(i, j int) bool { return q[i].before(q[j]) }
func (q eventQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)        { *q = append(*q, x.(*Event)) }
func (q *eventQueue) Pop() any {
	old := *q
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*q = old[:n-1]
	return e
}

// before is the queue's order: true time, then (in a bubble) the content
// key, then scheduling order.
func (e *Event) before(f *Event) bool {
	if e.At != f.At {
		return e.At < f.At
	}
	if e.key != f.key {
		return e.key < f.key
	}
	return e.seq < f.seq
}

// push and pop are container/heap's Push and Pop, step for step, without
// its interface calls: a Redlock exploration run pushes and pops tens of
// thousands of events, and the dynamic Less and Swap calls were about 7%
// of its CPU (issue 24).
func (q *eventQueue) push(e *Event) {
	*q = append(*q, e)
	h := *q
	j := len(h) - 1
	for j > 0 {
		i := (j - 1) / 2 // parent
		if !h[j].before(h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (q *eventQueue) pop() *Event {
	h := *q
	n := len(h) - 1
	h[0], h[n] = h[n], h[0]
	i := 0
	for {
		j := 2*i + 1 // left child
		if j >= n {
			break
		}
		if r := j + 1; r < n && h[r].before(h[j]) {
			j = r
		}
		if !h[j].before(h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
	e := h[n]
	h[n] = nil
	*q = h[:n]
	return e
}

// maxEventsPerInstant bounds the events at one instant of true time: past
// it, time has stopped (a retry loop with no delay over a network with no
// latency), and the run is cut short there (budget.go).
const maxEventsPerInstant = 1_000_000

// World is one simulated universe. Create it with New, build nodes and
// processes, then call Run. A World is not safe for use by several real
// goroutines except through the baton discipline of its processes.
type World struct {
	Seed  uint64
	Trace *Trace
	Net   *Network
	// DirectCommands counts the commands that took the direct path
	// (redis_direct.go) instead of go-redis's wire path.
	DirectCommands int

	now     time.Duration
	queue   eventQueue
	seq     uint64
	rng     *rand.Rand
	procs   []*Process
	live    int // processes alive that keep the world running
	current *Process
	// zombies are processes whose own code called runtime.Goexit: each
	// coroutine waits, its unwinding done, for shutdown to finish it.
	zombies []*Process
	failure error
	stopped bool
	// draining is set once every process has ended: the run goes on only
	// until the messages then in flight have landed.
	draining bool
	closers  []func()
	// runEnd and hostHooks are services' hooks (hooks.go).
	runEnd    []func()
	endWaits  []<-chan struct{}
	hostHooks []func(h *Host, c HostChange)
	// rt is the runtime (runtime.go): the kernel from New, or the
	// bubble from UseBubble, for the world's whole life.
	rt    Runtime
	hosts map[string]*Host
	// events counts the events scheduled; workLimit bounds the run's
	// work, and cut says which limit ended it early (budget.go).
	events    int64
	slab      []Event // newEvent's current slab
	workLimit int64
	cut       *Cut
	// instantLimit is maxEventsPerInstant (tests lower it).
	instantLimit int
	// replayer decodes replies for the direct path (redis_direct.go).
	replayer *replayClient
}

// New returns an empty world whose every random choice derives from seed.
func New(seed uint64) *World {
	w := &World{
		Seed:  seed,
		Trace: NewTrace(),
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),

		instantLimit: maxEventsPerInstant,
	}
	w.Net = newNetwork(w)
	w.rt = &kernel{w: w}
	return w
}

// Now is the current true time, measured from Epoch.
func (w *World) Now() time.Duration { return w.now }

// Rand is the world's only random source. Draw from it only while holding the
// baton (inside an event or a running process), never from a stray goroutine.
func (w *World) Rand() *rand.Rand { return w.rng }

// At schedules fn at true time t (or now, if t is in the past).
func (w *World) At(t time.Duration, fn func()) *Event { return w.schedule(t, "", true, fn) }

// atKey schedules fn at t under the given key.
func (w *World) atKey(t time.Duration, key string, fn func()) *Event {
	return w.schedule(t, key, false, fn)
}

// schedule queues an event at t (or now). With auto the runtime gives it
// its key (At and wakeAt); else key is its key. One call to the runtime
// per event, which the kernel answers by doing nothing.
func (w *World) schedule(t time.Duration, key string, auto bool, fn func()) *Event {
	if t < w.now {
		t = w.now
	}
	w.seq++
	w.events++
	e := w.newEvent()
	*e = Event{At: t, key: key, seq: w.seq, fn: fn}
	w.rt.queued(e, auto)
	w.queue.push(e)
	return e
}

// fire runs the event's work.
func (e *Event) fire(w *World) {
	switch {
	case e.wake != nil:
		w.wakeup(e.wake, e.wakeID)
	case e.msg != nil:
		w.Net.land(e.msg, e.msgID, e.deliver)
	default:
		e.fn()
	}
}

// wakeAt schedules a wakeup of p (parked with id) at true time t, as
// At(t, func() { w.wakeup(p, id) }) does, ordered the same way, without
// allocating a closure (issue 24: a closure per wakeup was a tenth of a
// Redlock run's allocations).
func (w *World) wakeAt(t time.Duration, p *Process, id uint64) *Event {
	e := w.schedule(t, "", true, nil)
	e.wake, e.wakeID = p, id
	return e
}

// eventSlab is how many events newEvent allocates at once.
const eventSlab = 64

// newEvent hands out the next Event of a slab allocated eventSlab at a time:
// a Redlock run schedules tens of thousands of events, and one allocation
// per event was a tenth of the run's allocations (issue 24). A slab lives as
// long as any of its events is referenced (a caller may keep one to Cancel
// it), so nothing is ever reused: only the allocation count changes.
func (w *World) newEvent() *Event {
	if len(w.slab) == 0 {
		w.slab = make([]Event, eventSlab)
	}
	e := &w.slab[0]
	w.slab = w.slab[1:]
	return e
}

// After schedules fn d after the current true time.
func (w *World) After(d time.Duration, fn func()) *Event { return w.At(w.Later(d), fn) }

// Later is true time d from now, saturated at the largest duration: a
// delay too long to represent (a clock at -999999 ppm scales 3 h to 3
// million hours) lies beyond any run's end, and w.now+d would wrap to the
// past and fire at once (issue 25).
func (w *World) Later(d time.Duration) time.Duration {
	if d > math.MaxInt64-w.now {
		return math.MaxInt64
	}
	return w.now + d
}

// Tracef records an untyped note, stamped with true time: a line of text
// no reader can take facts from. Prefer Record with a typed event.
func (w *World) Tracef(actor, format string, args ...any) {
	if w.Trace.Off {
		return
	}
	w.Trace.add(&event.Event{At: w.now, Actor: actor, Kind: event.Note, Note: fmt.Sprintf(format, args...)})
}

// Record adds one typed event to the run's record, stamped with true time
// and the actor that produced it. Callers whose fields cost something to
// compute check Tracing first.
func (w *World) Record(actor string, e event.Event) {
	if w.Trace.Off {
		return
	}
	e.At, e.Actor = w.now, actor
	w.Trace.add(&e)
}

// Tracing reports whether trace lines are recorded; callers skip building
// expensive descriptions when they are not.
func (w *World) Tracing() bool { return !w.Trace.Off }

// Fail aborts the run with err; Run returns it. Used for kernel invariants
// and for panics inside simulated processes.
func (w *World) Fail(err error) {
	if w.failure == nil {
		w.failure = err
	}
}

// OnClose registers cleanup run by Close (for example stopping miniredis).
func (w *World) OnClose(fn func()) { w.closers = append(w.closers, fn) }

// Run executes events in (time, sequence) order until the queue is empty or
// true time would pass limit, or every process has finished and every
// message that was in flight when the last one finished has arrived or been
// lost: a write delayed past its sender's end still reaches the resource (or
// a replica) and is checked. It then kills any process still alive, so no
// goroutine of the run outlives it.
//
// A run that exhausts its work budget, or whose time stops (too many
// events at one instant), ends there as if its duration ended there: Run
// returns nil and Cut says so (budget.go).
func (w *World) Run(limit time.Duration) error {
	defer w.shutdown()
	return w.rt.run(limit)
}

// Stop ends the run after the current event.
func (w *World) Stop() { w.stopped = true }

func (w *World) allProcessesDone() bool { return len(w.procs) > 0 && w.live == 0 }

// shutdown has the runtime end what the run left alive (the kernel kills
// the processes still parked and waits for each goroutine to unwind), then
// runs the registered closers.
func (w *World) shutdown() {
	w.rt.shutdown()
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
	w.closers = nil
}

// Close releases resources held outside the simulation (miniredis servers).
// Run calls it itself; calling it again is harmless.
func (w *World) Close() { w.shutdown() }
