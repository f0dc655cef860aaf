package ensemble

// The reconnect window, closed. When a connection breaks, go-zookeeper's
// loop (v1.0.4, Conn.loop) fails every request awaiting a reply
// (flushRequests), which wakes their callers, and goes straight on to
// connect(): it asks the HostProvider for the next server and, when that
// is the server it last used (retryStart: always on a one-server ensemble,
// else after a full round), fails every request queued but not yet sent
// (flushUnsentRequests, ErrNoServer) before it waits a second. A caller
// that sends again at once — go-zookeeper's own Lock, whose protected
// create lists the children right after a lost reply; a recipe that
// deletes its node when a listing fails — races that flush: queued before
// it, the request fails with ErrNoServer; after it, it goes out on the
// next connection. No kernel door lies between the two goroutines, so the
// Go scheduler chose, and a run's trace changed about once in a few
// hundred.
//
// The HostProvider is our code and the loop calls it right before that
// flush: there, when it is about to say retryStart, it settles. It
// schedules an event at the current instant and waits for it; the kernel
// (or, standalone, the ensemble's loop) only runs an event once every
// other goroutine of the bubble is durably blocked (synctest.Wait), so
// every caller the failed requests woke has sent what it sends at once
// before the flush runs. Such a request always fails with ErrNoServer: the
// loop was still going round, as a real client's loop, which never
// blocks on that path, mostly is.

// kindSettle orders a settle after the frames due at the same instant.
const kindSettle = 4

// settle returns once every goroutine of the bubble but the caller has
// gone as far as it can without the simulation moving on (see above).
// host is the client's host; the caller must hold neither the kernel nor
// e.mu. After Stop (or the run's end) it returns at once.
func (e *Ensemble) settle(host string) {
	done := make(chan struct{})
	scheduled := false
	schedule := func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.stopping {
			return
		}
		e.settles[host]++
		e.at(e.now(), kindSettle, host, int64(e.settles[host]), func() { close(done) })
		scheduled = true
	}
	if e.w == nil {
		schedule()
	} else {
		// A client goroutine enters the kernel first, then takes e.mu
		// (the lock order of world.go).
		e.w.Notify("zk settle "+host, schedule)
	}
	if !scheduled {
		return
	}
	select {
	case <-done:
	case <-e.stop:
	}
}

// Settle returns once every other goroutine of the bubble has gone as far
// as it can at the current instant, for client code that must not race
// another of its host's goroutines woken at the same instant: a recipe's
// background retry (gozk's guaranteed delete) settles after its pause, so
// that a request of the client's own, due at that instant too, is queued
// first. Call it from a goroutine of the bubble holding neither the
// kernel nor the ensemble; after Stop (or the run's end) it returns at
// once.
func (e *Ensemble) Settle(host string) { e.settle(host) }
