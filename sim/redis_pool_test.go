package sim

import (
	"bytes"
	"testing"
	"time"
)

// A miniredis instance reused from the pool answers a run exactly as a
// new one: nothing of the run that used it before shows, in any database,
// in the script cache, in TTLs or in the random source.
func TestPooledMiniredisIsFresh(t *testing.T) {
	// The old run: keys with and without TTLs in databases 0 and 1, a
	// hash, cached scripts, a WATCH, a transaction left open.
	dirty := func() (*World, *RedisNode) {
		w := New(3)
		n := w.NewRedisNode("A", NewClock(0, 0))
		p, q := n.NewPeer(), n.NewPeer()
		for _, c := range [][]string{
			{"SET", "lock", "a", "PX", "30000"}, {"SET", "plain", "x"}, {"HSET", "h", "f", "1"},
			{"SCRIPT", "LOAD", "return 1"}, {"EVAL", `return redis.call("set", KEYS[1], "lua")`, "1", "viaLua"},
			{"SELECT", "1"}, {"SET", "db1", "y", "EX", "100"}, {"WATCH", "lock"}, {"MULTI"}, {"SET", "queued", "1"},
		} {
			n.Exec(p, c)
		}
		n.Exec(q, []string{"WATCH", "plain"})
		return w, n
	}
	// The new run, on a node built by a world with the same seed either
	// way. (Not RANDOMKEY: miniredis draws an index into Go's map order,
	// which differs between two new instances too.)
	script := [][]string{
		{"KEYS", "*"}, {"DBSIZE"}, {"GET", "lock"}, {"PTTL", "lock"}, {"EXISTS", "plain", "h", "viaLua"},
		{"SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}, {"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"},
		{"SET", "k1", "v", "PX", "100"}, {"SET", "k2", "v"}, {"SET", "k3", "v"}, {"SPOP", "nope"},
		{"SADD", "s", "a", "b", "c", "d", "e"}, {"SRANDMEMBER", "s"}, {"SPOP", "s"},
		{"WATCH", "k2"}, {"MULTI"}, {"SET", "k2", "w"}, {"EXEC"}, {"EXEC"},
		{"SELECT", "1"}, {"KEYS", "*"}, {"GET", "db1"}, {"SELECT", "0"}, {"TIME"}, {"PTTL", "k1"},
	}
	replay := func(n *RedisNode) [][]byte {
		p := n.NewPeer()
		var out [][]byte
		for _, c := range script {
			out = append(out, n.Exec(p, c))
		}
		n.Clock.Jump(n.w.Now(), 150*time.Millisecond)
		out = append(out, n.Exec(p, []string{"GET", "k1"}), n.Exec(p, []string{"KEYS", "*"}))
		return out
	}
	fw := New(9)
	want := replay(fw.NewRedisNode("B", NewClock(0, 0)))
	fw.Close()

	reused := 0
	for attempt := 0; attempt < 40 && reused < 3; attempt++ {
		ow, old := dirty()
		used := old.mr
		ow.Close()
		releaseMiniredis(old.ticket)
		old.ticket.handed.Store(true) // released here, not again by the cleanup

		w := New(9)
		n := w.NewRedisNode("B", NewClock(0, 0))
		if n.mr != used {
			w.Close()
			continue // the pool dropped it (sync.Pool may, under -race)
		}
		reused++
		got := replay(n)
		w.Close()
		for i := range want {
			if !bytes.Equal(want[i], got[i]) {
				cmd := []string{"GET", "k1"}
				if i < len(script) {
					cmd = script[i]
				}
				t.Fatalf("reply %d (%v) on a reused instance: %q; a new instance replies %q", i, cmd, got[i], want[i])
			}
		}
	}
	if reused == 0 {
		t.Fatal("no instance came back from the pool in 40 attempts")
	}
}

// An instance that was handed out, or has a subscriber, never goes back.
func TestMiniredisHandedOutIsNotPooled(t *testing.T) {
	w := New(1)
	n := w.NewRedisNode("A", NewClock(0, 0))
	mr := n.Miniredis()
	w.Close()
	releaseMiniredis(n.ticket)
	for range 20 {
		if got, _ := miniredisPool.Get().(interface{ Addr() string }); got == any(mr) {
			t.Fatal("an instance handed out by Miniredis() went back to the pool")
		}
	}

	w = New(1)
	n = w.NewRedisNode("A", NewClock(0, 0))
	sub := n.mr
	n.Exec(n.NewPeer(), []string{"SUBSCRIBE", "news"})
	w.Close()
	releaseMiniredis(n.ticket)
	n.ticket.handed.Store(true)
	for range 20 {
		if got := miniredisPool.Get(); got == any(sub) {
			t.Fatal("an instance with a subscriber went back to the pool")
		}
	}
}
