package sim

// The freeze: in a bubble, a paused host is stopped whole, as a
// stop-the-world GC pause or SIGSTOP stops every thread of a process
// (docs/faults.md). The kernel cannot stop a library's goroutines, but
// everything those goroutines do that the rest of the run can see goes
// through a door of the kernel (a connection's write, read or close, a
// dial, Notify, a process coming back from the lock's code) or is a kernel
// event aimed at the host (a reply, a read timeout, a process's wake-up).
// So:
//
//   - A goroutine of a paused host that comes to a door waits at the
//     host's gate, outside the kernel, until the host resumes: a library
//     timer that fires mid-pause (go-zookeeper's ping ticker, a read
//     deadline, a renewal goroutine's sleep) changes nothing until then.
//   - A kernel event aimed at a paused host is held, not run.
//
// At Resume every held piece of work runs in one order that depends only
// on the run. First the goroutines stopped in the middle of an act — at
// the door of a write, a close or a dial — by the instant they stopped,
// then by name and by when they were held; then everything else (kernel
// work, goroutines at a read, at Notify or coming back from the lock's
// code) by the instant it would have happened, kernel work before
// goroutines of that instant, goroutines by name, then by when they were
// held. Each runs as a kernel event of its own at the resume instant, so
// what one sets off (a released ping goroutine writes, then blocks) has
// happened before the next.
//
// Why acts first: a goroutine stopped at a write chose what to write
// before the pause, and a library timer of its own that fired during the
// pause is still pending (go-zookeeper's sendLoop, stopped writing a
// ping, has the next tick of its ping ticker waiting). Released, it
// finishes the write and runs on until it blocks, taking what is pending
// for it. Were held kernel work of an earlier instant run first (the
// reply that wakes the worker, whose Unlock queues a DELETE for that same
// sendLoop), the goroutine would come back to its select with two cases
// ready, and Go picks one at random: the frames would go out PING DELETE
// PING in one run and PING PING DELETE in the next, with the same seed.
// Acting first, it finds only its own pending tick; what the rest of the
// resume sends it comes after, alone. This holds for a writer that does
// not wait for the reply (sendLoop; the reply is recvLoop's); a goroutine
// that writes and then waits for its reply blocks before it comes back to
// its select, and could still find two cases ready there.
//
// Traffic that already left the host, or that its TCP stack handles
// (keepalive probes, segments held in socket buffers), is the transports'
// business (sim/dbnet, sim/zk/ensemble); they hold it while the host is
// paused and send it on when it resumes.

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// heldWork is one piece of a paused host's work, waiting for Resume.
type heldWork struct {
	at   time.Duration // when it would have happened
	who  string        // "" for kernel work; else the goroutine at the gate
	act  bool          // the goroutine stopped in the middle of an act (write, close, dial)
	seq  uint64        // the host's count of held work
	fn   func()        // kernel work
	gate chan struct{} // closed to let a goroutine at the gate go on
}

// hold keeps fn, kernel work aimed at the paused host h, until it resumes.
func (h *Host) hold(fn func()) {
	h.heldSeq++
	h.held = append(h.held, heldWork{at: h.w.now, seq: h.heldSeq, fn: fn})
}

// gate is the door check (kernel held, by the goroutine b.who): while h
// is paused, the goroutine gives the kernel up and waits until Resume lets
// it go (or the host crashes, or the run ends). It returns with the kernel
// held again, in the caller's name.
func (b *bubble) gate(h *Host) { b.gateFor(h, false) }

// gateAct is gate for a goroutine at the door of an act: a write, a
// close or a dial (see the package comment for why it goes first).
func (b *bubble) gateAct(h *Host) { b.gateFor(h, true) }

func (b *bubble) gateFor(h *Host, act bool) {
	if h == nil {
		return
	}
	w := b.w
	for h.paused && !h.crashed && !b.ended {
		who, cur, rng := b.who, w.current, w.rng
		ch := make(chan struct{})
		h.heldSeq++
		h.held = append(h.held, heldWork{at: w.now, who: who, act: act, seq: h.heldSeq, gate: ch})
		b.leave()
		<-ch
		b.enter(who)
		w.current, w.rng = cur, rng
	}
}

// thaw schedules a resumed host's held work (bubble.go: kernel held), in
// the order the package comment gives, each as an event of its own now.
func (h *Host) thaw() {
	held := h.held
	h.held = nil
	slices.SortStableFunc(held, func(a, b heldWork) int {
		if a.act != b.act {
			if a.act {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if c := cmp.Compare(a.who, b.who); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for i, hw := range held {
		fn := hw.fn
		if g := hw.gate; g != nil {
			fn = func() { close(g) }
		}
		h.w.atKey(h.w.now, fmt.Sprintf("thaw %s %08d", h.Name, i), fn)
	}
}

// dropHeld forgets a host's held work when it crashes or the run ends:
// kernel work is dropped, and goroutines at the gate go on (they find
// their connections failed and their context cancelled).
func (h *Host) dropHeld() {
	for _, hw := range h.held {
		if hw.gate != nil {
			close(hw.gate)
		}
	}
	h.held = nil
}

// NotifyFrom is Notify for a goroutine of host h (a driver's, a library's,
// the lock's own): while h is paused it waits at h's gate first, so what
// it does takes effect when h resumes, in the order of the package
// comment. Outside a bubble it just calls fn.
func (w *World) NotifyFrom(h *Host, who string, fn func()) {
	w.notifyFrom(h, "", who, false, fn)
}

// NotifyFromNamed is NotifyFrom for a service that knows its client hosts
// by name (the ZooKeeper ensemble): the host is looked up in the kernel,
// where hosts are made.
func (w *World) NotifyFromNamed(host, who string, fn func()) {
	w.notifyFrom(nil, host, who, false, fn)
}

// ActFrom is NotifyFrom for a transport's door of an act — a write, a
// close or a dial of a goroutine of host h: while h is paused the
// goroutine waits at the gate and, at the resume, goes before the rest of
// the held work (see the package comment).
func (w *World) ActFrom(h *Host, who string, fn func()) {
	w.notifyFrom(h, "", who, true, fn)
}

// ActFromNamed is ActFrom for a host known by name, as NotifyFromNamed.
func (w *World) ActFromNamed(host, who string, fn func()) {
	w.notifyFrom(nil, host, who, true, fn)
}

func (w *World) notifyFrom(h *Host, name, who string, act bool, fn func()) {
	run := w.rt.notifyBegin(h, name, who, act)
	defer w.rt.notifyEnd()
	if run {
		fn()
	}
}

// AwaitThaw returns at once unless h is paused; then it waits until h
// resumes and its turn comes (see the package comment). A transport's Read
// calls it, outside the kernel and its own locks, before it reports a read
// deadline that passed: a frozen process cannot see its deadline pass
// until it runs again.
func (w *World) AwaitThaw(h *Host, who string) { w.awaitThaw(h, "", who) }

// AwaitThawNamed is AwaitThaw for a host known by name (looked up in the
// kernel, as NotifyFromNamed does).
func (w *World) AwaitThawNamed(host, who string) { w.awaitThaw(nil, host, who) }

func (w *World) awaitThaw(h *Host, name, who string) { w.rt.awaitThaw(h, name, who) }

// Notify runs fn in the kernel for a goroutine of the process's lock code
// (a watchdog reporting a lost lease): as NotifyFrom on the process's host.
func (p *Process) Notify(fn func()) { p.w.NotifyFrom(p.Host, p.Name, fn) }
