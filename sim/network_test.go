package sim

import (
	"testing"
	"time"
)

// Messages keep their order per connection, as TCP gives, not per pair of
// hosts: after a timeout go-redis closes its connection and dials a new
// one, and the new connection's traffic must not queue behind a reply that
// a fault holds back on the old one.
func TestReconnectDoesNotWaitBehindOldConnection(t *testing.T) {
	w := New(1)
	n := w.NewRedisNode("A", nil)
	h := w.NewHost("c1", nil)
	cl := n.NewClient(h, ClientOptions{Timeout: 50 * time.Millisecond})
	// Hold back the reply to the first SET by 2s.
	held := false
	w.Net.AddFilter(func(m *Message) (bool, time.Duration, string) {
		if !held && m.Dir == Reply && m.Op == "SET" {
			held = true
			return false, 2 * time.Second, "test delay"
		}
		return false, 0, ""
	})
	var firstErr error
	var second time.Duration
	var got string
	h.Spawn("c1", 0, func(p *Process) {
		firstErr = cl.Set(p.Context(), "k", "1", 0).Err() // times out
		start := w.Now()
		got = cl.Get(p.Context(), "k").Val() // on a new connection
		second = w.Now() - start
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if firstErr == nil {
		t.Fatal("the first SET did not time out")
	}
	if got != "1" || second > 10*time.Millisecond {
		t.Fatalf("GET on the new connection took %v (reply %q): it waited behind the old connection's delayed reply", second, got)
	}
	if len(w.Net.Delays) != 1 || w.Net.Delays[0].To-w.Net.Delays[0].From < 2*time.Second {
		t.Fatalf("delays recorded %+v, want the one held-back reply", w.Net.Delays)
	}
}

// On one connection the order is kept: a reply sent after a delayed one
// arrives after it.
func TestOneConnectionKeepsOrder(t *testing.T) {
	w := New(1)
	var order []int
	w.At(0, func() {
		c := w.Net.NewConn()
		w.Net.AddFilter(func(m *Message) (bool, time.Duration, string) {
			if m.Summary == "first" {
				return false, time.Second, "test delay"
			}
			return false, 0, ""
		})
		w.Net.Send(&Message{Conn: c, From: "a", To: "b", Summary: "first"}, func() { order = append(order, 1) })
		w.Net.Send(&Message{Conn: c, From: "a", To: "b", Summary: "second"}, func() { order = append(order, 2) })
		other := w.Net.NewConn()
		w.Net.Send(&Message{Conn: other, From: "a", To: "b", Summary: "third"}, func() { order = append(order, 3) })
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(order) != 3 || order[0] != 3 || order[1] != 1 || order[2] != 2 {
		t.Fatalf("arrival order %v, want [3 1 2]: the other connection first, then the held-back pair in order", order)
	}
}
