package sim

import (
	"bytes"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestLazyTTLClockSameReplies is the proof behind redis_clock.go: a node
// that advances miniredis's TTLs only when a command could tell replies
// byte for byte as one that advances them before every command (as
// ClockTTL's tick did), under any interleaving of expiring writes, TTL
// reads, lock scripts, Lua, transactions, other databases and clock jumps
// forward and back, and ends with the same dataset and TTLs.
func TestLazyTTLClockSameReplies(t *testing.T) {
	keys := []string{"k1", "k2", "k3"}
	skipped := 0
	rapid.Check(t, func(t *rapid.T) {
		eager, lazy := newScriptWorld(true), newScriptWorld(true)
		defer eager.w.Close()
		defer lazy.w.Close()
		eager.n.clockEager = true
		key := func() string { return rapid.SampledFrom(keys).Draw(t, "key") }
		ms := func() string {
			return rapid.SampledFrom([]string{"1", "50", "100", "999", "1000", "1001", "30000"}).Draw(t, "ms")
		}
		owner := func() string { return rapid.SampledFrom([]string{"a", "b"}).Draw(t, "owner") }
		run := func(args ...string) {
			peer := rapid.IntRange(0, 1).Draw(t, "peer")
			want := eager.n.Exec(eager.peers[peer], args)
			got := lazy.n.Exec(lazy.peers[peer], args)
			if !bytes.Equal(want, got) {
				t.Fatalf("%s at %v\n  TTLs advanced every command: %q\n  advanced when needed:        %q", commandSummary(args), lazy.n.lastLocal, want, got)
			}
			if lazy.n.ttlBase != lazy.n.lastLocal {
				skipped++
			}
		}
		// absolute is a PXAT/PEXPIREAT time near the node's clock.
		absolute := func() string {
			off := rapid.SampledFrom([]int{-100, 1, 100, 1000, 5000}).Draw(t, "at")
			return msString(lazy.n.Clock.Local(lazy.w.Now()) + time.Duration(off)*time.Millisecond)
		}
		commands := map[string]func(*rapid.T){
			"set":         func(t *rapid.T) { run("SET", key(), owner()) },
			"set-px":      func(t *rapid.T) { run("SET", key(), owner(), "PX", ms()) },
			"set-nx-px":   func(t *rapid.T) { run("SET", key(), owner(), "NX", "PX", ms()) },
			"set-nx-pxat": func(t *rapid.T) { run("SET", key(), owner(), "NX", "PXAT", absolute()) },
			"set-nx":      func(t *rapid.T) { run("SET", key(), owner(), "NX") },
			"set-xx-px":   func(t *rapid.T) { run("SET", key(), owner(), "XX", "PX", ms()) },
			"set-keepttl": func(t *rapid.T) { run("SET", key(), owner(), "KEEPTTL") },
			"set-nx-get":  func(t *rapid.T) { run("SET", key(), owner(), "NX", "GET", "PX", ms()) },
			"get":         func(t *rapid.T) { run("GET", key()) },
			"exists":      func(t *rapid.T) { run("EXISTS", key()) },
			"del":         func(t *rapid.T) { run("DEL", key()) },
			"incr":        func(t *rapid.T) { run("INCR", key()) },
			"hset":        func(t *rapid.T) { run("HSET", key(), owner(), "1") },
			"hget":        func(t *rapid.T) { run("HGET", key(), owner()) },
			"pttl":        func(t *rapid.T) { run("PTTL", key()) },
			"ttl":         func(t *rapid.T) { run("TTL", key()) },
			"pexpiretime": func(t *rapid.T) { run("PEXPIRETIME", key()) },
			"pexpire":     func(t *rapid.T) { run("PEXPIRE", key(), ms()) },
			"pexpireat":   func(t *rapid.T) { run("PEXPIREAT", key(), absolute()) },
			"persist":     func(t *rapid.T) { run("PERSIST", key()) },
			"idletime":    func(t *rapid.T) { run("OBJECT", "IDLETIME", key()) },
			"time":        func(t *rapid.T) { run("TIME") },
			"select":      func(t *rapid.T) { run("SELECT", rapid.SampledFrom([]string{"0", "0", "0", "1"}).Draw(t, "db")) },
			"multi":       func(t *rapid.T) { run("MULTI") },
			"exec":        func(t *rapid.T) { run("EXEC") },
			"watch":       func(t *rapid.T) { run("WATCH", key()) },
			"lua-pttl":    func(t *rapid.T) { run("EVAL", `return redis.call("pttl", KEYS[1])`, "1", key()) },
			"acquire-release": func(t *rapid.T) {
				k, o := key(), owner()
				run("SET", k, o, "NX", "PX", ms())
				if rapid.Bool().Draw(t, "renew") {
					run("EVAL", ScriptCompareAndPExpire, "1", k, owner(), ms())
				}
				run("EVAL", ScriptCompareAndDelete, "1", k, owner())
			},
			"reentrant": func(t *rapid.T) {
				src := rapid.SampledFrom([]string{ScriptReentrantAcquire, ScriptReentrantRenew, ScriptReentrantRelease}).Draw(t, "op")
				run("EVAL", src, "1", key(), ms(), owner())
			},
		}
		advance := func(t *rapid.T) {
			d := rapid.SampledFrom([]int{0, 1, 10, 99, 100, 500, 1000, 1001, 5000, 30000, -50, -1000}).Draw(t, "advance")
			for _, sw := range []*scriptWorld{eager, lazy} {
				sw.clock.Jump(sw.w.Now(), time.Duration(d)*time.Millisecond)
			}
		}
		// Every command may find the clock moved since the last one, as
		// nearly every command does in a run.
		steps := map[string]func(*rapid.T){}
		for name, cmd := range commands {
			steps[name] = func(t *rapid.T) {
				advance(t)
				cmd(t)
			}
		}
		t.Repeat(steps)
		if a, b := eager.snapshot(), lazy.snapshot(); a != b {
			t.Fatalf("datasets differ\nTTLs advanced every command:\n%s\nadvanced when needed:\n%s", a, b)
		}
	})
	// The proof means little if the lazy node never left its TTLs behind.
	if skipped == 0 {
		t.Fatal("the lazy node advanced its TTLs before every command: nothing was compared")
	}
	t.Logf("commands after which the TTLs were left behind: %d", skipped)
}
