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

import (
	"container/heap"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"
)

// bubble is the world's state when it runs inside a synctest bubble.
type bubble struct {
	mu   sync.Mutex
	base time.Time // virtual time at true time zero
	kick chan struct{}
	// waitingFor is the true time the kernel sleeps until (-1: awake).
	waitingFor time.Duration
	// who names the goroutine inside the kernel ("" for the kernel itself);
	// events it schedules are keyed by who and a per-who count.
	who      string
	counters map[string]uint64
	// msgs counts each stream's messages (bubbleKey); msgKey is the
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
	id       string // host>node#k, k counting that host's dials to that node
	who      string // "c " and id: who enters the kernel for the connection
	reads    uint64
	ready    chan struct{}
	waiting  bool
	timedOut bool
}

// UseBubble makes the world run inside the calling testing/synctest bubble
// (see the package comment of this file). Call it right after New, inside
// synctest.Test, before building nodes and processes.
func (w *World) UseBubble() {
	w.b = &bubble{
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

// Bubble reports whether the world runs inside a synctest bubble.
func (w *World) Bubble() bool { return w.b != nil }

// BubbleSteps is the number of kernel steps taken so far (0 outside a
// bubble); a watchdog outside the bubble uses it to notice a run that no
// longer moves.
func (w *World) BubbleSteps() uint64 {
	if w.b == nil {
		return 0
	}
	return w.b.Steps.Load()
}

// virtualNow is true time as the bubble's clock shows it.
func (w *World) virtualNow() time.Duration { return time.Since(w.b.base) }

// enter takes the kernel for a goroutine called who.
func (w *World) enter(who string) {
	w.b.mu.Lock()
	if v := w.virtualNow(); v > w.now {
		w.now = v
	}
	w.b.who = who
}

// leave gives the kernel back.
func (w *World) leave() {
	w.b.who = ""
	w.current = nil
	w.rng = w.b.kernel
	w.b.mu.Unlock()
}

func (w *World) enterProc(p *Process) {
	w.enter("p " + p.Name)
	w.current = p
	w.rng = p.rng
	p.inKernel = true
}

func (w *World) leaveProc(p *Process) {
	p.inKernel = false
	w.leave()
}

// autoKey orders an event scheduled by a goroutine: by who scheduled it and
// how many it scheduled before. The kernel's own events keep key "" and
// their sequence order, which is deterministic.
func (w *World) autoKey() string {
	if w.b == nil || w.b.who == "" {
		return ""
	}
	n := w.b.counters[w.b.who] + 1
	w.b.counters[w.b.who] = n
	return fmt.Sprintf("%s #%08d", w.b.who, n)
}

// noteScheduled wakes the sleeping kernel when an event lands before the
// instant it sleeps until (a library timer fired and its goroutine sent a
// message).
func (w *World) noteScheduled(t time.Duration) {
	if w.b.waitingFor >= 0 && t < w.b.waitingFor {
		select {
		case w.b.kick <- struct{}{}:
		default:
		}
	}
}

// contentRand is a random source seeded by the world's seed and a message's
// content: draws about a message do not depend on who sent first.
func (w *World) contentRand(key string) *rand.Rand {
	return rand.New(rand.NewPCG(w.Seed, fnv64a(key)))
}

// fnv64a is hash/fnv's 64-bit FNV-1a of s, without its allocations.
func fnv64a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// messageSource is a reusable contentRand.
type messageSource struct {
	pcg *rand.PCG
	r   *rand.Rand
}

// messageRand makes the world's source contentRand(key) for the draws
// about one message, and returns the source to give back with
// endMessageRand. The draws end before Network.Send or Judge returns, so
// the source is the bubble's own, reseeded per message instead of
// allocated (one per nesting level): the same draws, without the garbage.
func (w *World) messageRand(key string) (saved *rand.Rand) {
	b := w.b
	if b.msgDepth == len(b.msgRands) {
		pcg := rand.NewPCG(0, 0)
		b.msgRands = append(b.msgRands, &messageSource{pcg: pcg, r: rand.New(pcg)})
	}
	src := b.msgRands[b.msgDepth]
	b.msgDepth++
	src.pcg.Seed(w.Seed, fnv64a(key))
	saved = w.rng
	w.rng = src.r
	return saved
}

// endMessageRand gives the world's source back after a message's draws.
func (w *World) endMessageRand(saved *rand.Rand) {
	w.rng = saved
	w.b.msgDepth--
}

// bubbleKey orders a message by its content and draws its jitter and
// filter decisions from that content. stream is the connection it travels
// on (or who sent it); n counts the stream's messages. The key reads
// "to<from dir summary @stream#n".
func (n *Network) bubbleKey(m *Message) string {
	w := n.w
	stream := m.order
	if stream == "" {
		stream = w.b.who
		if stream == "" {
			stream = "kernel"
		}
	}
	c := w.b.msgs[stream] + 1
	w.b.msgs[stream] = c
	k := append(w.b.msgKey[:0], m.To...)
	k = append(k, '<')
	k = append(k, m.From...)
	k = append(k, ' ')
	k = append(k, m.Dir...)
	k = append(k, ' ')
	k = append(k, m.Summary...)
	k = append(k, " @"...)
	k = append(k, stream...)
	k = append(k, '#')
	k = strconv.AppendUint(k, c, 10)
	w.b.msgKey = k
	return string(k)
}

// bubbleArrival keeps each stream in order, as TCP does per connection.
func (n *Network) bubbleArrival(m *Message, at time.Duration) time.Duration {
	stream := m.order + "|" + m.From + ">" + m.To
	if prev := n.w.b.fifo[stream]; at < prev {
		at = prev
	}
	n.w.b.fifo[stream] = at
	return at
}

// hostBubble returns h's context, creating it on first use.
func (w *World) hostState(h *Host) *hostBubble {
	hb := w.b.hosts[h]
	if hb == nil {
		ctx, cancel := context.WithCancel(context.Background())
		hb = &hostBubble{ctx: ctx, cancel: cancel}
		w.b.hosts[h] = hb
	}
	return hb
}

// bubbleCrash cuts a crashed host's goroutines off: its context is
// cancelled and its connections fail.
func (w *World) bubbleCrash(h *Host) {
	w.hostState(h).cancel()
	h.dropHeld()
	for _, c := range w.b.conns {
		if c.host == h {
			c.signal()
		}
	}
}

// Inside runs fn back inside the kernel from the code Outside runs (a
// user's lock calling a simulated service whose calls park the process,
// as sim/fsnode's file API does). Called anywhere else it just calls fn.
func (p *Process) Inside(fn func()) {
	w := p.w
	if w.b == nil || !p.outside {
		fn()
		return
	}
	w.enterProc(p)
	p.outside = false
	fn()
	p.outside = true
	w.leaveProc(p)
}

// Outside runs fn — the lock's own code — outside the kernel: in a bubble
// the process gives the kernel up while fn runs, so the goroutines fn starts
// can enter it. If the host crashed or the run ended meanwhile, the process
// ends when fn returns. Outside a bubble it just calls fn.
func (p *Process) Outside(fn func()) {
	w := p.w
	if w.b == nil {
		fn()
		return
	}
	p.outside = true
	w.leaveProc(p)
	fn()
	w.enterProc(p)
	// A paused host's thread comes back from the lock's code when the
	// host resumes (freeze.go).
	w.gate(p.Host)
	p.outside = false
	if p.killed {
		p.exiting = true
		runtime.Goexit()
	}
}

// Notify runs fn inside the kernel on behalf of a goroutine of the lock's
// code (who names it in event keys), for a harness goroutine that reports
// what the lock told it — for example that it lost its lease. Outside a
// bubble it just calls fn.
func (w *World) Notify(who string, fn func()) {
	if w.b == nil {
		fn()
		return
	}
	w.enter("notify " + who)
	defer w.leave()
	if !w.b.ended {
		fn()
	}
}

// bubbleMain is a process's goroutine in a bubble.
func (p *Process) bubbleMain(fn func(p *Process)) {
	w := p.w
	defer func() {
		r := recover()
		if !p.inKernel {
			w.enterProc(p)
		}
		if r != nil {
			w.Fail(fmt.Errorf("process %s panicked: %v", p.Name, r))
		}
		p.finish()
		w.b.running--
		w.leaveProc(p)
	}()
	<-p.wake
	w.enterProc(p)
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

func (p *Process) bubblePark() {
	if p.exiting {
		return
	}
	p.parked = true
	p.w.leaveProc(p)
	<-p.wake
	p.w.enterProc(p)
	if p.killed {
		p.exiting = true
		runtime.Goexit()
	}
}

// bubbleWake lets a parked process go on; it runs once the kernel lets go.
func (w *World) bubbleWake(p *Process) {
	p.parked = false
	p.wake <- struct{}{}
}

// bubbleKill ends a process. A parked one unwinds now; one inside the
// lock's code has ended for the simulation at once (a crash does not wait)
// and its goroutine unwinds when that code returns.
func (w *World) bubbleKill(p *Process) {
	if p.done {
		return
	}
	p.killed = true
	if p.parked {
		w.bubbleWake(p)
		return
	}
	if p.outside {
		p.finish()
	}
}

// windDown is how long the kernel waits, after a run ends, for the lock's
// goroutines to return; they see failing connections and a cancelled
// context, so a well-behaved lock returns in a few of its retry delays.
const windDown = 10 * time.Minute

// runBubble is Run inside a bubble.
func (w *World) runBubble(limit time.Duration) error {
	b := w.b
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
		if v := w.virtualNow(); v > w.now {
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
	w.endBubble()
	b.mu.Unlock()
	return w.failure
}

// endBubble ends the run (kernel held): every connection fails, every
// host's context is cancelled, every process ends; then it waits, in
// virtual time, for the goroutines to return.
func (w *World) endBubble() {
	b := w.b
	end := w.now
	b.ended = true
	w.runEndHooks()
	for _, h := range w.hostOrder() {
		w.hostState(h).cancel()
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
		w.bubbleKill(p)
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
func (w *World) hostOrder() []*Host {
	var out []*Host
	seen := map[*Host]bool{}
	for _, p := range w.procs {
		if !seen[p.Host] {
			seen[p.Host] = true
			out = append(out, p.Host)
		}
	}
	for _, c := range w.b.conns {
		if !seen[c.host] {
			seen[c.host] = true
			out = append(out, c.host)
		}
	}
	return out
}
