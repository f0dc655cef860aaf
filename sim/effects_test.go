package sim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// runClient runs fn as a client process on host c1 talking to node n, and
// the world until it settles.
func runClient(t *testing.T, w *World, n *RedisNode, fn func(p *Process, c *redis.Client)) {
	t.Helper()
	h := w.NewHost("c1", nil)
	c := n.NewClient(h, ClientOptions{Timeout: 5 * time.Second})
	h.Spawn("c1", 0, func(p *Process) { fn(p, c) })
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
}

func aofText(n *RedisNode) []string {
	var out []string
	for _, c := range n.AOF() {
		out = append(out, strings.Join(c, " "))
	}
	return out
}

// Redis propagates only commands that changed the dataset: a SET NX that
// finds the key taken, a DEL of a missing key and a PEXPIRE of a missing
// key leave the AOF and the replicas alone.
func TestOnlyChangesPropagate(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		ctx := p.Context()
		c.SetArgs(ctx, "lock", "t1", redis.SetArgs{Mode: "NX", TTL: 10 * time.Second})
		c.SetArgs(ctx, "lock", "t2", redis.SetArgs{Mode: "NX", TTL: 10 * time.Second}) // fails
		c.Del(ctx, "missing")
		c.PExpire(ctx, "missing", time.Second)
		c.Get(ctx, "lock")
	})
	got := aofText(a)
	if len(got) != 1 || !strings.HasPrefix(got[0], "SET lock t1 PXAT ") {
		t.Fatalf("AOF %q, want only the successful SET, as SET … PXAT", got)
	}
}

// Relative expiries travel as absolute times on the master's clock
// (t_string.c setGenericCommand: PX → PXAT; expire.c: PEXPIRE → PEXPIREAT).
func TestRelativeExpiryTravelsAbsolute(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", NewClock(3*time.Second, 0)) // A's clock reads 3s ahead
	var sentAt time.Duration
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		ctx := p.Context()
		sentAt = p.TrueNow()
		c.Set(ctx, "k", "v", 10*time.Second)
		c.PExpire(ctx, "k", 20*time.Second)
	})
	got := aofText(a)
	if len(got) != 2 || !strings.HasPrefix(got[0], "SET k v PXAT ") || !strings.HasPrefix(got[1], "PEXPIREAT k ") {
		t.Fatalf("AOF %q", got)
	}
	// The SET ran about 1 ms after it was sent: its absolute expiry is A's
	// local time then (3 s ahead) plus 10 s.
	at := parseUnixMs(strings.TrimPrefix(got[0], "SET k v PXAT "))
	if !strings.HasPrefix(got[0], "SET k v PXAT 17") {
		t.Fatalf("PXAT is not in Unix milliseconds: %q", got[0])
	}
	if low := 13*time.Second + sentAt; at < low || at > low+5*time.Millisecond {
		t.Fatalf("PXAT %v, want about %v (master clock + 10s)", at, low)
	}
}

// A script is propagated as its effects, never as the EVAL, both by the
// native fast path and by miniredis's Lua; a script that changed nothing
// propagates nothing.
func TestScriptsPropagateEffects(t *testing.T) {
	for _, native := range []bool{true, false} {
		w := New(1)
		a := w.NewRedisNode("A", nil)
		if native {
			a.ScriptFastPath = NativeScripts
		}
		runClient(t, w, a, func(p *Process, c *redis.Client) {
			ctx := p.Context()
			c.Set(ctx, "lock", "mine", 0)
			c.Eval(ctx, ScriptCompareAndDelete, []string{"lock"}, "theirs") // no effect
			c.Eval(ctx, ScriptCompareAndDelete, []string{"lock"}, "mine")
			c.Eval(ctx, ScriptReentrantAcquire, []string{"r"}, "5000", "owner")
		})
		got := aofText(a)
		if len(got) != 4 || got[0] != "SET lock mine" || got[1] != "DEL lock" || got[2] != "HSET r owner 1" || !strings.HasPrefix(got[3], "PEXPIREAT r ") {
			t.Fatalf("native=%v: AOF %q, want SET, DEL, HSET, PEXPIREAT", native, got)
		}
	}
}

// A failed SET NX on the master must not reach the replica: the replica
// that lost the holder's SET stays empty (issue 11, defect 1).
func TestFailedSetNXDoesNotReachReplica(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.Replicate(b, 100*time.Millisecond)
	dropped := false
	w.Net.AddFilter(func(m *Message) (bool, time.Duration, string) {
		if m.Op == "REPLICATE" && !dropped {
			dropped = true
			return true, 0, "test: the first write is lost"
		}
		return false, 0, ""
	})
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		ctx := p.Context()
		c.SetArgs(ctx, "lock", "c1", redis.SetArgs{Mode: "NX", TTL: 10 * time.Second})
		c.SetArgs(ctx, "lock", "c2", redis.SetArgs{Mode: "NX", TTL: 10 * time.Second})
		p.Sleep(time.Second)
	})
	if b.Miniredis().Exists("lock") {
		v, _ := b.Miniredis().Get("lock")
		t.Fatalf("replica holds lock=%q from a SET NX that failed on the master", v)
	}
}

// A replica never expires a key itself; it reads a key its own clock says
// has expired as missing, and drops it when the master's DEL arrives.
func TestReplicaExpiry(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", NewClock(2*time.Second, 0)) // B's clock is 2 s ahead
	a.Replicate(b, 100*time.Millisecond)
	hb := w.NewHost("r", nil)
	rb := b.NewClient(hb, ClientOptions{})
	var stored, readable, afterDel []bool
	hb.Spawn("r", 0, func(p *Process) {
		for _, at := range []time.Duration{7 * time.Second, 9 * time.Second, 10200 * time.Millisecond} {
			p.Sleep(at - p.TrueNow())
			stored = append(stored, b.Miniredis().Exists("k"))
			readable = append(readable, rb.Exists(p.Context(), "k").Val() == 1)
		}
	})
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		c.Set(p.Context(), "k", "v", 10*time.Second)
		p.Sleep(11 * time.Second)
		afterDel = append(afterDel, b.Miniredis().Exists("k"))
	})
	// 7 s: live everywhere. 9 s: B's clock reads 11 s, past the expiry: B
	// still stores the key but answers as if missing. 10.2 s: A expired it
	// at 10 s and its DEL (100 ms lag) has reached B.
	if !slices.Equal(stored, []bool{true, true, false}) || !slices.Equal(readable, []bool{true, false, false}) || afterDel[0] {
		t.Fatalf("stored %v, readable %v, after DEL %v", stored, readable, afterDel)
	}
	if got := aofText(a); got[len(got)-1] != "DEL k" {
		t.Fatalf("master AOF %q, want the expiry as a DEL", got)
	}
}

// Replicas refuse client writes with Redis's READONLY error, scripts that
// write included, and serve reads.
func TestReplicaIsReadOnly(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	b.ScriptFastPath = NativeScripts
	a.Apply("SET", "lock", "mine")
	a.Replicate(b, 100*time.Millisecond)
	var setErr, evalErr error
	var v string
	runClient(t, w, b, func(p *Process, c *redis.Client) {
		ctx := p.Context()
		setErr = c.Set(ctx, "x", "1", 0).Err()
		evalErr = c.Eval(ctx, ScriptCompareAndDelete, []string{"lock"}, "mine").Err()
		v = c.Get(ctx, "lock").Val()
	})
	const ro = "READONLY You can't write against a read only replica."
	if setErr == nil || setErr.Error() != ro || evalErr == nil || evalErr.Error() != ro {
		t.Fatalf("SET on replica: %v; EVAL: %v; want %q", setErr, evalErr, ro)
	}
	if v != "mine" {
		t.Fatalf("replica lock = %q after a refused script, want mine", v)
	}
}

// On promotion a replica starts expiring keys on its own clock: a key whose
// expiry passed while the master's DEL was lost goes at once, as a DEL in
// the new master's stream.
func TestPromotionStartsExpiring(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.Replicate(b, 100*time.Millisecond)
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		c.Set(p.Context(), "k", "v", time.Second)
		p.Sleep(500 * time.Millisecond)
		w.At(w.Now(), a.Crash) // the DEL at 1 s will never be sent
		p.Sleep(time.Second)
		if !b.Miniredis().Exists("k") {
			t.Error("replica dropped the key on its own")
		}
		b.Promote()
	})
	if b.Miniredis().Exists("k") {
		t.Fatal("promoted replica kept an expired key")
	}
	if got := aofText(b); got[len(got)-1] != "DEL k" {
		t.Fatalf("new master AOF %q, want a DEL for the expired key", got)
	}
}

// appendfsync always restores what was acknowledged, with absolute
// expiries, and state the harness wrote through Apply (issue 11, defect 2).
func TestAOFAbsoluteExpiryAndApply(t *testing.T) {
	for _, c := range []struct {
		down   time.Duration
		exists bool
	}{{500 * time.Millisecond, true}, {3 * time.Second, false}} {
		w := New(1)
		a := w.NewRedisNode("A", nil)
		a.Apply("SET", "fence", "33")
		runClient(t, w, a, func(p *Process, cl *redis.Client) {
			cl.Set(p.Context(), "k", "v", 2*time.Second)
			p.Sleep(500 * time.Millisecond)
			w.At(w.Now(), a.Crash)
			w.At(w.Now()+c.down, func() { a.Restart("always") })
			p.Sleep(c.down + 100*time.Millisecond)
		})
		if got := a.Miniredis().Exists("k"); got != c.exists {
			t.Fatalf("down %v: key exists %v after restart, want %v (expiry is absolute)", c.down, got, c.exists)
		}
		if v, _ := a.Miniredis().Get("fence"); v != "33" {
			t.Fatalf("down %v: fence = %q after an appendfsync-always restart, want 33", c.down, v)
		}
	}
}

// A run does not end with a message in flight: a message delayed past its
// sender's end still arrives, and then the run stops.
func TestRunEndsWhenNetworkQuiet(t *testing.T) {
	w := New(1)
	h := w.NewHost("c1", nil)
	w.NewHost("store", nil)
	delivered := time.Duration(-1)
	w.Net.AddFilter(func(m *Message) (bool, time.Duration, string) { return false, 5 * time.Second, "test" })
	h.Spawn("c1", 0, func(p *Process) {
		w.Net.Send(&Message{From: "c1", To: "store", Client: "c1", Dir: Request, Op: "WRITE"}, func() { delivered = w.Now() })
	})
	w.At(time.Minute, func() {}) // something later in the queue
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if delivered < 5*time.Second || w.Now() != delivered {
		t.Fatalf("delivered at %v, run ended at %v", delivered, w.Now())
	}
}

// WAIT replies how many replicas acknowledged the writes before it, when
// enough have or when its timeout passes on the master's clock.
func TestWait(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	c := w.NewRedisNode("C", nil)
	a.Replicate(b, 100*time.Millisecond)
	a.Replicate(c, 100*time.Millisecond)
	w.Net.Cut("A", "C") // C never gets the write
	var all, one int64
	var allTook, oneTook time.Duration
	runClient(t, w, a, func(p *Process, cl *redis.Client) {
		ctx := context.Background()
		cl.Set(ctx, "k", "v", 0)
		t0 := p.TrueNow()
		all = cl.Wait(ctx, 2, 500*time.Millisecond).Val()
		allTook = p.TrueNow() - t0
		cl.Set(ctx, "k2", "v", 0)
		t0 = p.TrueNow()
		one = cl.Wait(ctx, 1, 0).Val()
		oneTook = p.TrueNow() - t0
	})
	if all != 1 || allTook < 500*time.Millisecond || allTook > 510*time.Millisecond {
		t.Fatalf("WAIT 2 500: %d after %v, want 1 after the 500 ms timeout", all, allTook)
	}
	if one != 1 || oneTook > 150*time.Millisecond {
		t.Fatalf("WAIT 1 0: %d after %v, want 1 as soon as B acknowledged (lag 100 ms)", one, oneTook)
	}
}

// min-replicas-to-write: the master refuses every write, even one that
// would change nothing, once too few replicas acknowledged within the lag.
func TestMinReplicasToWrite(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.MinReplicasToWrite, a.MinReplicasMaxLag = 1, 2*time.Second
	a.Replicate(b, 100*time.Millisecond)
	var before, after, read, script error
	var ttl time.Duration
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		ctx := p.Context()
		before = c.Set(ctx, "k", "v", time.Minute).Err()
		w.Net.Cut("B", "A") // acks stop arriving
		p.Sleep(5 * time.Second)
		after = c.SetArgs(ctx, "k", "x", redis.SetArgs{Mode: "NX"}).Err()
		read = c.Get(ctx, "k").Err()
		script = c.Eval(ctx, ScriptCompareAndDelete, []string{"k"}, "v").Err()
		ttl = c.PTTL(ctx, "k").Val()
	})
	if before != nil || read != nil {
		t.Fatalf("write with a good replica: %v; read: %v", before, read)
	}
	if after == nil || after.Error() != "NOREPLICAS Not enough good replicas to write." {
		t.Fatalf("write without good replicas: %v", after)
	}
	// A script that would write is refused and leaves the key as it was,
	// expiry included.
	if script == nil || script.Error() != after.Error() || ttl < 54*time.Second || ttl > 55*time.Second {
		t.Fatalf("refused script: %v; key's ttl afterwards %v, want about 55s", script, ttl)
	}
}

// Sentinel failover: a client that can reach the new master follows it; a
// client cut off from it keeps writing to the old master, which serves it
// until the partition heals and it rejoins as a replica, dropping its data.
func TestSentinelSplitBrainAndRejoin(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	c := w.NewRedisNode("C", nil)
	a.Replicate(b, 100*time.Millisecond)
	a.Replicate(c, 100*time.Millisecond)
	h1, h2 := w.NewHost("c1", nil), w.NewHost("c2", nil)
	cl1, cl2 := a.NewClient(h1, ClientOptions{}), a.NewClient(h2, ClientOptions{})
	for _, pair := range [][2]string{{"A", "B"}, {"A", "C"}, {"A", "c2"}, {"c1", "B"}, {"c1", "C"}} {
		w.Net.Cut(pair[0], pair[1])
		w.Net.Cut(pair[1], pair[0])
	}
	var err1, err2 error
	var oldSide string
	h1.Spawn("c1", 0, func(p *Process) {
		p.Sleep(2 * time.Second)
		err1 = cl1.Set(p.Context(), "side", "old", 0).Err()
		p.Sleep(3 * time.Second)
		// The failover client dropped its idle connection to A at
		// +switch-master (go-redis sentinel.go onFailover), so the very
		// next command dials B and succeeds.
		var err error
		oldSide, err = cl1.Get(p.Context(), "side").Result()
		if err != nil {
			t.Errorf("first read after the rejoin: %v, want it served by B", err)
		}
	})
	h2.Spawn("c2", 0, func(p *Process) {
		p.Sleep(2 * time.Second)
		cl2.Set(p.Context(), "side", "x", 0) // times out: A is cut off
		err2 = cl2.Set(p.Context(), "side", "new", 0).Err()
	})
	w.At(time.Second, func() {
		if err := b.Promote(); err != nil {
			t.Error(err)
		}
	})
	w.At(3*time.Second, w.Net.HealAll)
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if err1 != nil || err2 != nil {
		t.Fatalf("old side SET: %v, new side SET: %v; both sides should accept writes", err1, err2)
	}
	if c.Master() != b || a.Master() != b {
		t.Fatalf("after heal: C follows %v, A follows %v; want both to follow B", c.Master(), a.Master())
	}
	if v, _ := a.Miniredis().Get("side"); v != "new" {
		t.Fatalf("A after rejoining holds side=%q, want B's value new", v)
	}
	if oldSide != "new" {
		t.Fatalf("c1 after the heal reads %q, want new (it followed the master)", oldSide)
	}
}

// A write queued for shipping dies with the master even if it restarts
// before the shipping time; the replicas then resynchronise with what the
// master came back with — nothing, without persistence.
func TestMasterRestartResyncsReplicas(t *testing.T) {
	for _, c := range []struct {
		persistence string
		want        bool
	}{{"none", false}, {"always", true}} {
		w := New(1)
		a := w.NewRedisNode("A", nil)
		b := w.NewRedisNode("B", nil)
		a.Apply("SET", "old", "1")
		a.Replicate(b, time.Second)
		runClient(t, w, a, func(p *Process, cl *redis.Client) {
			cl.Set(p.Context(), "x", "1", 0)
			w.At(w.Now()+100*time.Millisecond, a.Crash)
			w.At(w.Now()+200*time.Millisecond, func() { a.Restart(c.persistence) })
			p.Sleep(2 * time.Second)
		})
		if b.Miniredis().Exists("x") != c.want || b.Miniredis().Exists("old") != c.want {
			t.Fatalf("persistence %s: replica has x=%v old=%v, want %v", c.persistence, b.Miniredis().Exists("x"), b.Miniredis().Exists("old"), c.want)
		}
	}
}

// A script that writes a key it did not declare in KEYS (a standalone
// server allows it) still has its effect propagated.
func TestUndeclaredScriptKeyPropagates(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		c.Eval(p.Context(), `redis.call("set", "hidden", "1"); return 1`, nil)
	})
	if got := aofText(a); len(got) != 1 || got[0] != "SET hidden 1" {
		t.Fatalf("AOF %q, want SET hidden 1", got)
	}
}
