package sim

// Seams for simulated services that live outside this package and run
// their own protocol over the world's kernel (the ZooKeeper ensemble of
// sim/zk/ensemble): they schedule keyed events, hear when the network is
// cut or healed and when a host pauses, resumes or crashes, let the
// world's fault filters judge their frames and its observers see them, and
// wind down when a bubble run ends. Every hook runs with the kernel held.

import (
	"cmp"
	"fmt"
	"github.com/locklab/locklab/sim/event"
	"slices"
	"time"
)

// AtKey schedules fn at true time t, ordered among the events of that
// instant by key (then by scheduling order). In a bubble a service that
// schedules from a goroutine's door names the event by its content (the
// connection and its message number), so same-instant events never run in
// the order racing goroutines entered the kernel. Key "" sorts first.
func (w *World) AtKey(t time.Duration, key string, fn func()) *Event {
	return w.atKey(t, key, fn)
}

// BubbleTime is true time t on the bubble's clock (time.Now inside the
// bubble reads BubbleTime(w.Now()) while the kernel runs). It panics
// outside a bubble, where no library clock is virtual.
func (w *World) BubbleTime(t time.Duration) time.Time { return w.rt.virtualTime(t) }

// OnRunEnd registers fn, run once when the run ends, kernel held, before
// the bubble waits for the lock's goroutines to return: a service with
// connections of its own resets them there and refuses new ones, so those
// goroutines fail fast instead of waiting for a kernel that no longer
// moves. Hooks run in the order they were registered.
func (w *World) OnRunEnd(fn func()) { w.runEnd = append(w.runEnd, fn) }

func (w *World) runEndHooks() {
	hooks := w.runEnd
	w.runEnd = nil
	for _, f := range hooks {
		f()
	}
}

// WaitAtEnd makes the end of a bubble run also wait, in virtual time and
// for at most the same wind-down as the processes, until done is closed:
// a service that closes its clients from an OnRunEnd hook (go-zookeeper's
// Close waits up to a second for its close request) registers each
// closing goroutine here, so that none of them is still blocked when the
// bubble's main goroutine returns (synctest stops time then and reports
// them as deadlocked). Call it with the kernel held, e.g. from an
// OnRunEnd hook.
func (w *World) WaitAtEnd(done <-chan struct{}) { w.endWaits = append(w.endWaits, done) }

// endWaitsLeft is how many WaitAtEnd channels are still open.
func (w *World) endWaitsLeft() int {
	n := 0
	for _, ch := range w.endWaits {
		select {
		case <-ch:
		default:
			n++
		}
	}
	return n
}

// HostChange is what happened to a host, for OnHostChange.
type HostChange int

const (
	HostPaused HostChange = iota + 1
	HostResumed
	HostCrashed
)

func (c HostChange) String() string {
	switch c {
	case HostPaused:
		return "paused"
	case HostResumed:
		return "resumed"
	case HostCrashed:
		return "crashed"
	}
	return "?"
}

// OnHostChange registers fn, called (kernel held) after any host pauses,
// resumes or crashes: a service that owns the host's connections (rather
// than the kernel's own redis connections, which look at the host
// directly) holds or resets them.
func (w *World) OnHostChange(fn func(h *Host, c HostChange)) {
	w.hostHooks = append(w.hostHooks, fn)
}

func (w *World) hostChanged(h *Host, c HostChange) {
	for _, f := range w.hostHooks {
		f(h, c)
	}
}

// OnCutChange registers fn, called (kernel held) for every one-way link
// whose state Cut, Heal or HealAll changes, after the change: a service
// with its own connections learns of partitions as they happen (a TCP
// connection holds its bytes across a cut instead of losing them).
func (n *Network) OnCutChange(fn func(from, to string, cut bool)) {
	n.cutHooks = append(n.cutHooks, fn)
}

func (n *Network) cutChanged(from, to string, cut bool) {
	for _, f := range n.cutHooks {
		f(from, to, cut)
	}
}

// IsCut reports whether messages from one host to another are cut off (a
// partition; a down receiver is not a cut, see Reachable).
func (n *Network) IsCut(from, to string) bool { return n.cut[[2]string{from, to}] }

// Judge shows a message a service sends on its own connection to the
// fault filters, as Send would, and returns their verdict: drop it, or
// delay it by delay. The caller carries the message and decides what a
// loss means (for TCP, a reset connection) and calls Delivered when it
// arrives. In a bubble, set m.Stream to the connection's name: random
// draws of the filters (a drop probability) then come from the message's
// content, not from which goroutine sent first.
func (n *Network) Judge(m *Message) (drop bool, delay time.Duration, reason string) {
	n.nextID++
	m.ID = n.nextID
	n.Sent++
	n.Bytes += int64(m.Size)
	w := n.w
	// In a bubble the stream orders the message and seeds its draws;
	// nothing reads order under the kernel.
	if m.order == "" {
		m.order = m.Stream
	}
	_, saved := w.rt.message(m)
	if saved != nil {
		defer w.rt.endMessage(saved)
	}
	for _, f := range n.filters {
		d, extra, why := f(m)
		if d {
			n.Dropped++
			w.Record(m.From, m.event(event.MessageDropped, why, 0))
			return true, 0, why
		}
		if extra > 0 {
			w.Record(m.From, m.event(event.MessageDelayed, why, extra))
			delay += extra
			reason = why
		}
	}
	if delay > 0 {
		n.Delays = append(n.Delays, Delayed{From: w.now, To: w.now + delay, Client: m.Client, Ends: [2]string{m.From, m.To},
			Summary: fmt.Sprintf("%s %s→%s %s (%s)", m.Dir, m.From, m.To, m.Op, reason)})
	}
	return false, delay, reason
}

// Delivered shows the observers (fault triggers, the run's message count)
// a message a service carried itself, at the instant it arrives.
func (n *Network) Delivered(m *Message) {
	for _, o := range n.observers {
		o(m)
	}
}

// healAll is HealAll's body: the cuts go in a fixed order, so hooks that
// trace or schedule do so deterministically.
func (n *Network) healAll() {
	var links [][2]string
	for k := range n.cut {
		links = append(links, k)
	}
	slices.SortFunc(links, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	clear(n.cut)
	for _, l := range links {
		n.cutChanged(l[0], l[1], false)
	}
}
