package ensemble

import (
	"container/heap"
	"testing/synctest"
	"time"
)

// The ensemble's event queue and the one loop that delivers every event
// in (instant, kind, host, key) order; transport.go says why.

type event struct {
	at   time.Time
	kind int    // 0 internal, 1 client→server, 2 server→client
	host string // the client host of the connection
	key  int64  // the host's connection number<<32 | per-direction sequence
	seq  uint64
	fn   func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }

func (q eventQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.host != b.host {
		return a.host < b.host
	}
	if a.key != b.key {
		return a.key < b.key
	}
	return a.seq < b.seq
}

func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

func (q *eventQueue) Push(x any) { *q = append(*q, x.(*event)) }

func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// driver moves the ensemble's time: it says what time it is and runs
// scheduled functions under e.mu. New uses the ensemble's own loop
// (loopDriver); NewOnWorld uses a sim.World's kernel (worldDriver,
// world.go). Nothing else in the ensemble reads a clock or schedules.
type driver interface {
	now() time.Time
	// at runs fn at instant t; events of one instant run in (kind, host,
	// key) order, then in the order they were scheduled.
	at(t time.Time, kind int, host string, key int64, fn func())
}

// loopDriver is the standalone driver: the bubble's clock and the loop's
// queue.
type loopDriver struct{ e *Ensemble }

func (d loopDriver) now() time.Time { return time.Now() }

func (d loopDriver) at(t time.Time, kind int, host string, key int64, fn func()) {
	e := d.e
	e.seq++
	heap.Push(&e.queue, &event{at: t, kind: kind, host: host, key: key, seq: e.seq, fn: fn})
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// at schedules fn (run under e.mu) at instant t.
func (e *Ensemble) at(t time.Time, kind int, host string, key int64, fn func()) {
	e.drv.at(t, kind, host, key, fn)
}

func (e *Ensemble) after(d time.Duration, fn func()) { e.at(e.now().Add(d), kindInternal, "", 0, fn) }

func (e *Ensemble) now() time.Time { return e.drv.now() }

// loop is the ensemble's clockwork; it runs until Stop.
func (e *Ensemble) loop() {
	defer close(e.stopped)
	for {
		synctest.Wait()
		e.mu.Lock()
		if e.stopping {
			e.mu.Unlock()
			return
		}
		now := e.now()
		if len(e.queue) > 0 && !e.queue[0].at.After(now) {
			ev := heap.Pop(&e.queue).(*event)
			ev.fn()
			e.stats.Events++
			e.mu.Unlock()
			continue
		}
		var timer *time.Timer
		var tc <-chan time.Time
		if len(e.queue) > 0 {
			timer = time.NewTimer(e.queue[0].at.Sub(now))
			tc = timer.C
		}
		e.mu.Unlock()
		select {
		case <-e.kick:
		case <-tc:
		case <-e.stop:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
