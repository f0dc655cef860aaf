package sim

import (
	"testing"
	"testing/synctest"
	"time"
)

// go-redis closes the connection after a timeout and dials a new one; the
// node must forget the closed one. A day of lost requests kept 65 MB of
// dead connections (one per attempt) before (issue 25).
func TestLostRequestsLeaveNoConnectionsBehind(t *testing.T) {
	w := New(1)
	node := w.NewRedisNode("A", nil)
	w.Net.AddFilter(func(m *Message) (bool, time.Duration, string) { return m.Dir == Request, 0, "every request" })
	h := w.NewHost("c1", nil)
	cl := node.NewClient(h, ClientOptions{})
	attempts := 0
	h.Spawn("c1", 0, func(p *Process) {
		for {
			attempts++
			cl.SetNX(p.Context(), "lock", "c1", time.Second)
			p.Sleep(100 * time.Millisecond)
		}
	})
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if attempts < 10_000 || len(node.conns) > 1 {
		t.Fatalf("%d attempts left %d connections on the node", attempts, len(node.conns))
	}
}

// go-redis's own retries back off on the real clock while the client holds
// the baton: simulated time does not move, so the sleep changes nothing but
// wall time, and an hour of lost requests took hours (issue 25). Under the
// baton the backoff is off; in a bubble, where it is virtual time, it stays.
func TestLibraryRetriesDoNotSleepOnTheRealClock(t *testing.T) {
	w := New(1)
	o := w.NewRedisNode("A", nil).NewClient(w.NewHost("c1", nil), ClientOptions{LibraryRetries: true}).Options()
	if o.MaxRetries != 3 || o.MinRetryBackoff != 0 || o.MaxRetryBackoff != 0 {
		t.Fatalf("baton: %d retries, backoff %v..%v", o.MaxRetries, o.MinRetryBackoff, o.MaxRetryBackoff)
	}
	synctest.Test(t, func(t *testing.T) {
		w := New(1)
		w.UseBubble()
		o := w.NewRedisNode("A", nil).NewClient(w.NewHost("c1", nil), ClientOptions{LibraryRetries: true}).Options()
		if o.MaxRetries != 3 || o.MinRetryBackoff == 0 {
			t.Fatalf("bubble: %d retries, backoff %v..%v", o.MaxRetries, o.MinRetryBackoff, o.MaxRetryBackoff)
		}
		w.Run(time.Second)
	})
}
