package sim

// The bubble runtime: the kernel run inside a testing/synctest bubble, for
// lock libraries that start goroutines, sleep, use timers, time.Now and
// context deadlines (redsync, bsm/redislock, a lock with a renewal
// goroutine). The baton scheduler cannot host such code: it neither knows
// nor controls those goroutines, and real timers do not move simulated time.
//
// Inside a bubble, time is virtual and synctest.Wait returns once every
// other goroutine of the bubble is durably blocked. The kernel uses that to
// stay deterministic:
//
//   - Kernel state sits behind one mutex. A goroutine enters the kernel only
//     through a few doors (a simulated connection's Write, Read and Close, a
//     dial, a harness process that parks or returns from the lock's code),
//     and leaves it before it blocks.
//   - The kernel runs one event at a time, and calls synctest.Wait after each,
//     so everything the event set off (a reply wakes redsync's pool goroutine,
//     which wakes its Lock call) has happened before the next event.
//   - Events due at one instant are ordered by content — destination, source,
//     the command, the connection and its message number — never by which
//     goroutine got to the mutex first. Latency jitter and random fault
//     decisions about a message are drawn from a source seeded by that same
//     content, so the order in which racing goroutines send does not change
//     them. Trace lines written between two kernel steps are sorted.
//   - The kernel moves virtual time itself, with a timer up to the next
//     event; when a library timer fires first and the goroutine it wakes
//     schedules an earlier event, the kernel is kicked awake.
//
// Goroutines a library starts cannot be paused one by one; they belong to a
// client host through the connections they use. A paused host's connections
// hold what arrives for them and what they send until the host resumes; a
// crashed host's connections fail at once and its context is cancelled, and
// the harness forgets the host's goroutines (they wind down on their own,
// without effect). Library clocks are the bubble's one virtual clock: a
// client's clock cannot jump or drift here (node clocks still can).

// This file holds the bubble's state, its doors and its processes;
// bubble_run.go its loop, bubble_message.go the keys and draws of its
// messages, freeze.go its paused hosts, bubble_conn.go its Redis
// connections. It is one of the world's two runtimes (runtime.go).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// bubble is the runtime of a world that runs inside a synctest bubble.
type bubble struct {
	w    *World
	mu   sync.Mutex
	base time.Time // virtual time at true time zero
	kick chan struct{}
	// waitingFor is the true time the kernel sleeps until (-1: awake).
	waitingFor time.Duration
	// who names the goroutine inside the kernel ("" for the kernel itself);
	// events it schedules are keyed by who and a per-who count.
	who      string
	counters map[string]uint64
	// msgs counts each stream's messages (messageKey); msgKey is the
	// buffer a message's key is built in.
	msgs   map[string]uint64
	msgKey []byte
	// msgRands are the sources of the draws about a message
	// (messageRand), one per nesting level of Network.Send and Judge.
	msgRands []*messageSource
	msgDepth int
	kernel   *rand.Rand
	conns    []*redisConn
	dials    map[string]int
	fifo     map[string]time.Duration
	hosts    map[*Host]*hostBubble
	ended    bool
	running  int // process goroutines not yet returned
	// Steps counts kernel steps; a watchdog outside the bubble reads it to
	// tell a stuck run from a slow one.
	Steps atomic.Uint64
}

// hostBubble is a host's share of the bubble: the context handed to its
// lock code, cancelled when the host crashes or the run ends.
type hostBubble struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// connBubble is a simulated connection's state in the bubble.
type connBubble struct {
	b        *bubble
	id       string // host>node#k, k counting that host's dials to that node
	who      string // "c " and id: who enters the kernel for the connection
	reads    uint64
	ready    chan struct{}
	waiting  bool
	timedOut bool
}

// UseBubble makes the world run inside the calling testing/synctest bubble
// (see the package comment of this file). Call it right after New, inside
// synctest.Test, before building nodes and processes: the runtime is the
// world's for its whole life (runtime.go), so UseBubble panics once a
// process exists or an event was scheduled.
func (w *World) UseBubble() {
	if len(w.procs) > 0 || w.events > 0 {
		panic("sim: UseBubble after the world started building processes or events (call it right after New)")
	}
	w.rt = &bubble{
		w:          w,
		base:       time.Now(),
		kick:       make(chan struct{}, 1),
		waitingFor: -1,
		counters:   map[string]uint64{},
		msgs:       map[string]uint64{},
		kernel:     w.rng,
		dials:      map[string]int{},
		fifo:       map[string]time.Duration{},
		hosts:      map[*Host]*hostBubble{},
	}
	w.Trace.sorted = true
}

// Bubble reports whether the world runs inside a synctest bubble: a
// service that needs the bubble's virtual clock (sim/zk/ensemble,
// sim/dbnet) checks it when it is built.
func (w *World) Bubble() bool {
	_, ok := w.rt.(*bubble)
	return ok
}

// BubbleSteps is the number of kernel steps taken so far (0 outside a
// bubble); a watchdog outside the bubble uses it to notice a run that no
// longer moves.
func (w *World) BubbleSteps() uint64 { return w.rt.steps() }

func (b *bubble) steps() uint64 { return b.Steps.Load() }

func (b *bubble) virtualTime(t time.Duration) time.Time { return b.base.Add(t) }

// virtualNow is true time as the bubble's clock shows it.
func (b *bubble) virtualNow() time.Duration { return time.Since(b.base) }

// enter takes the kernel for a goroutine called who.
func (b *bubble) enter(who string) {
	b.mu.Lock()
	w := b.w
	if v := b.virtualNow(); v > w.now {
		w.now = v
	}
	b.who = who
}

// leave gives the kernel back.
func (b *bubble) leave() {
	w := b.w
	b.who = ""
	w.current = nil
	w.rng = b.kernel
	b.mu.Unlock()
}

func (b *bubble) enterProc(p *Process) {
	b.enter("p " + p.Name)
	b.w.current = p
	b.w.rng = p.rng
	p.inKernel = true
}

func (b *bubble) leaveProc(p *Process) {
	p.inKernel = false
	b.leave()
}

// eventKey orders an event scheduled by a goroutine: by who scheduled it
// and how many it scheduled before. The kernel's own events keep key ""
// and their sequence order, which is deterministic.
func (b *bubble) eventKey() string {
	if b.who == "" {
		return ""
	}
	n := b.counters[b.who] + 1
	b.counters[b.who] = n
	return fmt.Sprintf("%s #%08d", b.who, n)
}

// queued keys an event At scheduled (eventKey), and wakes the sleeping
// kernel when an event lands before the instant it sleeps until (a
// library timer fired and its goroutine sent a message).
func (b *bubble) queued(e *Event, auto bool) {
	if auto {
		e.key = b.eventKey()
	}
	if b.waitingFor >= 0 && e.At < b.waitingFor {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

// hostState returns h's share of the bubble, creating it on first use.
func (b *bubble) hostState(h *Host) *hostBubble {
	hb := b.hosts[h]
	if hb == nil {
		ctx, cancel := context.WithCancel(context.Background())
		hb = &hostBubble{ctx: ctx, cancel: cancel}
		b.hosts[h] = hb
	}
	return hb
}

// context is cancelled when the host crashes or the run ends, so that a
// library's background goroutines can stop.
func (b *bubble) context(h *Host) context.Context { return b.hostState(h).ctx }

// crashed cuts a crashed host's goroutines off: its context is
// cancelled and its connections fail.
func (b *bubble) crashed(h *Host) {
	b.hostState(h).cancel()
	h.dropHeld()
	for _, c := range b.conns {
		if c.host == h {
			c.signal()
		}
	}
}

// holdWake holds the wake-up with the rest of the host's work (freeze.go),
// in the order it would have happened.
func (b *bubble) holdWake(p *Process, id uint64) {
	p.Host.hold(func() { b.w.wakeup(p, id) })
}

// thaw is stop-the-world's end: everything the host held runs now, in
// the order freeze.go gives.
func (b *bubble) thaw(h *Host) { h.thaw() }

// insideBegin takes the kernel back for a process inside the lock's code
// (Process.Inside); elsewhere the process holds it already.
func (b *bubble) insideBegin(p *Process) bool {
	if !p.outside {
		return false
	}
	b.enterProc(p)
	p.outside = false
	return true
}

func (b *bubble) insideEnd(p *Process) {
	p.outside = true
	b.leaveProc(p)
}

// outsideBegin gives the kernel up while the lock's code runs, so the
// goroutines it starts can enter it.
func (b *bubble) outsideBegin(p *Process) {
	p.outside = true
	b.leaveProc(p)
}

func (b *bubble) outsideEnd(p *Process) {
	b.enterProc(p)
	// A paused host's thread comes back from the lock's code when the
	// host resumes (freeze.go).
	b.gate(p.Host)
	p.outside = false
	if p.killed {
		p.exiting = true
		runtime.Goexit()
	}
}

// notifyBegin enters the kernel as "notify who" and waits at h's gate
// while h is paused (freeze.go); the function runs unless the run has
// ended. notifyEnd gives the kernel back.
func (b *bubble) notifyBegin(h *Host, name, who string, act bool) bool {
	b.enter("notify " + who)
	if h == nil && name != "" {
		h = b.w.hosts[name]
	}
	b.gateFor(h, act)
	return !b.ended
}

func (b *bubble) notifyEnd() { b.leave() }

func (b *bubble) awaitThaw(h *Host, name, who string) {
	b.enter("thaw " + who)
	if h == nil {
		h = b.w.hosts[name]
	}
	b.gate(h)
	b.leave()
}

// start runs the process on a goroutine of the bubble, with a random
// source of its own, seeded by its name.
func (b *bubble) start(p *Process, fn func(p *Process)) {
	p.wake = make(chan struct{}, 1)
	p.rng = b.w.contentRand("process " + p.Name)
	b.running++
	go b.processMain(p, fn)
}

// processMain is a process's goroutine in a bubble.
func (b *bubble) processMain(p *Process, fn func(p *Process)) {
	w := b.w
	defer func() {
		r := recover()
		if !p.inKernel {
			b.enterProc(p)
		}
		if r != nil {
			w.Fail(fmt.Errorf("process %s panicked: %v", p.Name, r))
		}
		p.finish()
		b.running--
		b.leaveProc(p)
	}()
	<-p.wake
	b.enterProc(p)
	if p.killed {
		return
	}
	fn(p)
}

// finish does a process's end bookkeeping once.
func (p *Process) finish() {
	if p.done {
		return
	}
	p.done = true
	p.parked = false
	if !p.background {
		p.w.live--
	}
	for _, f := range p.onExit {
		f()
	}
}

func (b *bubble) park(p *Process) {
	if p.exiting {
		return
	}
	p.parked = true
	b.leaveProc(p)
	<-p.wake
	b.enterProc(p)
	if p.killed {
		p.exiting = true
		runtime.Goexit()
	}
}

// parkIdle is park: a killed helper unwinds as any process does.
func (b *bubble) parkIdle(p *Process) bool {
	b.park(p)
	return true
}

// wake lets a parked process go on; it runs once the kernel lets go.
func (b *bubble) wake(p *Process) {
	p.parked = false
	p.wake <- struct{}{}
}

// kill ends a process. A parked one unwinds now; one inside the lock's
// code has ended for the simulation at once (a crash does not wait) and
// its goroutine unwinds when that code returns.
func (b *bubble) kill(p *Process) {
	if p.done {
		return
	}
	p.killed = true
	if p.parked {
		b.wake(p)
		return
	}
	if p.outside {
		p.finish()
	}
}

// shutdown has nothing left to end: the loop's end (bubble_run.go) killed
// every process and waited for the goroutines.
func (b *bubble) shutdown() {}

// redisClient keeps go-redis on the wire path: the direct path runs a
// command in the caller's process under the baton (redis_direct.go), and
// here the caller is a goroutine of the lock's code. The library's retry
// backoff stays: in a bubble it sleeps on virtual time, as a real
// client's sleeps on real time.
func (b *bubble) redisClient(o ClientOptions, opt *redis.Options) ClientOptions {
	o.Direct = false
	return o
}

// redisDialer enters the kernel to dial, after the host's gate.
func (b *bubble) redisDialer(host *Host, dial func() *redisConn) func(context.Context, string, string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) {
		b.enter("dial " + host.Name)
		defer b.leave()
		b.gateAct(host)
		return dial(), nil
	}
}

// miniredisPool is nil: an instance's goroutines belong to the bubble
// that started them.
func (b *bubble) miniredisPool() *sync.Pool { return nil }
