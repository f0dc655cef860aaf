package sim

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2/server"
	"pgregory.net/rapid"
)

// scriptWorld is one Redis node driven command by command, with two client
// connections and a clock the test moves by hand.
type scriptWorld struct {
	w       *World
	n       *RedisNode
	clock   *Clock
	peers   []*server.Peer
	handled map[string]int // native answers, by "EVAL name" / "EVALSHA name"
}

func newScriptWorld(native bool) *scriptWorld {
	w := New(1)
	clock := NewClock(0, 0)
	n := w.NewRedisNode("A", clock)
	sw := &scriptWorld{w: w, n: n, clock: clock, peers: []*server.Peer{n.NewPeer(), n.NewPeer()}, handled: map[string]int{}}
	if native {
		n.ScriptFastPath = func(n *RedisNode, peer *server.Peer, args []string) ([]byte, bool) {
			r, ok := NativeScripts(n, peer, args)
			if ok {
				sw.handled[scriptCallName(args)]++
			}
			return r, ok
		}
	}
	return sw
}

func scriptCallName(args []string) string {
	op := strings.ToUpper(args[0])
	if len(args) < 2 {
		return op
	}
	if s := nativeBySHA[args[1]]; s != nil && op == "EVALSHA" {
		return op + " " + s.name
	}
	if s := nativeBySrc[args[1]]; s != nil && op == "EVAL" {
		return op + " " + s.name
	}
	return op + " ?"
}

// snapshot is everything a script could have changed: every key of
// databases 0 and 1 with its type, value and TTL, and which scripts are
// cached.
func (sw *scriptWorld) snapshot() string {
	mr := sw.n.Miniredis()
	var b strings.Builder
	b.WriteString(mr.Dump())
	for db := 0; db < 2; db++ {
		d := mr.DB(db)
		for _, k := range d.Keys() {
			fmt.Fprintf(&b, "db%d %q %s ttl=%v", db, k, d.Type(k), d.TTL(k))
			switch d.Type(k) {
			case "string":
				v, _ := d.Get(k)
				fmt.Fprintf(&b, " %q", v)
			case "hash":
				fields, _ := d.HKeys(k)
				for _, f := range fields {
					fmt.Fprintf(&b, " %q=%q", f, d.HGet(k, f))
				}
			}
			b.WriteByte('\n')
		}
	}
	peer := sw.n.NewPeer()
	for _, s := range nativeList {
		fmt.Fprintf(&b, "script %s cached: %q\n", s.name, sw.n.Dispatch(peer, []string{"SCRIPT", "EXISTS", s.sha}))
	}
	return b.String()
}

// scriptPair runs every command on a node with the fast path and on one
// without, and insists on byte-identical replies.
type scriptPair struct {
	lua, native *scriptWorld
}

func newScriptPair() *scriptPair {
	return &scriptPair{lua: newScriptWorld(false), native: newScriptWorld(true)}
}

func (p *scriptPair) Close() {
	p.lua.w.Close()
	p.native.w.Close()
}

type scriptFatalf interface {
	Helper()
	Fatalf(format string, args ...any)
}

func (p *scriptPair) exec(t scriptFatalf, peer int, args ...string) (reply string, handled bool) {
	t.Helper()
	before := p.native.handled[scriptCallName(args)]
	want := p.lua.n.Exec(p.lua.peers[peer], args)
	got := p.native.n.Exec(p.native.peers[peer], args)
	if !bytes.Equal(want, got) {
		t.Fatalf("%s\n  lua:    %q\n  native: %q", commandSummary(args), want, got)
	}
	return string(got), p.native.handled[scriptCallName(args)] > before
}

func (p *scriptPair) advance(d time.Duration) {
	for _, sw := range []*scriptWorld{p.lua, p.native} {
		sw.clock.Jump(sw.w.Now(), d)
	}
}

func (p *scriptPair) checkSame(t scriptFatalf) {
	t.Helper()
	if a, b := p.lua.snapshot(), p.native.snapshot(); a != b {
		t.Fatalf("datasets differ\nlua:\n%s\nnative:\n%s", a, b)
	}
}

// nonNativeScript is not native: it must always reach miniredis's Lua.
const nonNativeScript = `return redis.call("get", KEYS[1])`

// TestNativeScriptsEquivalent is the proof behind the fast path: under any
// interleaving of lock scripts with plain writes, wrong types, malformed
// arguments, transactions, script flushes and clock jumps, a node with
// NativeScripts replies byte for byte as one running miniredis's Lua, and
// ends with the same dataset and script cache.
func TestNativeScriptsEquivalent(t *testing.T) {
	keys := []string{"k1", "k2"}
	owners := []string{"a", "b"}
	ttls := []string{"100", "1000", "1000", "30000", "30000", "0", "-5", "abc", "", "1.5", "9223372036854775807"}
	values := []string{"a", "b", "1", "2", "0", "-1", "x", ""}
	total := map[string]int{}

	rapid.Check(t, func(t *rapid.T) {
		p := newScriptPair()
		defer p.Close()
		peer := func() int { return rapid.IntRange(0, 1).Draw(t, "peer") }
		key := func() string { return rapid.SampledFrom(keys).Draw(t, "key") }
		owner := func() string { return rapid.SampledFrom(owners).Draw(t, "owner") }
		ttl := func() string { return rapid.SampledFrom(ttls).Draw(t, "ttl") }
		value := func() string { return rapid.SampledFrom(values).Draw(t, "value") }
		// redislock's values are a token and its metadata; the token's
		// length (ARGV[2] of its obtain) says which prefix must match.
		token := func() string {
			return rapid.SampledFrom([]string{"a", "ab", "abc", "b", "ba", "a" + "1"}).Draw(t, "token")
		}
		tokenLen := func() string {
			return rapid.SampledFrom([]string{"1", "1", "2", "3", "7", "0", "-1", "01", "x", "1.0", ""}).Draw(t, "tokenlen")
		}

		// script draws a script (a native one, or one that is not) and
		// arguments shaped as an algorithm sends them, with the odd
		// malformed call.
		pick := func() int { return rapid.IntRange(0, len(nativeList)).Draw(t, "script") }
		argsFor := func(i int) (src, sha string, rest []string) {
			if i == len(nativeList) {
				return nonNativeScript, scriptSHA1(nonNativeScript), []string{"1", key()}
			}
			s := nativeList[i]
			src, sha = s.src, s.sha
			if rapid.IntRange(0, 4).Draw(t, "malformed") > 0 {
				rest = []string{"1", key()}
				switch {
				case s.argc == 1:
					rest = append(rest, owner())
				case s.src == ScriptCompareAndPExpire:
					rest = append(rest, owner(), ttl())
				case s.src == ScriptRedislockObtain:
					rest = append(rest, token(), tokenLen(), ttl())
				default:
					rest = append(rest, ttl(), owner())
				}
				return
			}
			rest = []string{rapid.SampledFrom([]string{"0", "1", "2", "-1", "x", "01"}).Draw(t, "numkeys")}
			for range rapid.IntRange(0, 2).Draw(t, "nkeys") {
				rest = append(rest, key())
			}
			for range rapid.IntRange(0, 3).Draw(t, "nargs") {
				rest = append(rest, rapid.SampledFrom(append(append([]string{}, owners...), ttls...)).Draw(t, "arg"))
			}
			return
		}
		script := func() (src, sha string, rest []string) { return argsFor(pick()) }
		run := func(args ...string) { p.exec(t, peer(), args...) }

		t.Repeat(map[string]func(*rapid.T){
			"set": func(t *rapid.T) { run("SET", key(), value()) },
			"set-px": func(t *rapid.T) {
				run("SET", key(), owner(), "PX", rapid.SampledFrom([]string{"50", "1000", "30000"}).Draw(t, "px"))
			},
			"hset": func(t *rapid.T) { run("HSET", key(), owner(), value()) },
			"hincrby": func(t *rapid.T) {
				run("HINCRBY", key(), owner(), rapid.SampledFrom([]string{"1", "-1", "2"}).Draw(t, "by"))
			},
			"del":     func(t *rapid.T) { run("DEL", key()) },
			"pexpire": func(t *rapid.T) { run("PEXPIRE", key(), ttl()) },
			"advance": func(t *rapid.T) {
				ms := rapid.SampledFrom([]int{1, 10, 99, 100, 500, 1000, 5000, 30000, -50, -1000}).Draw(t, "ms")
				p.advance(time.Duration(ms) * time.Millisecond)
			},
			"script-flush": func(t *rapid.T) { run("SCRIPT", "FLUSH") },
			"script-load": func(t *rapid.T) {
				src, _, _ := script()
				run("SCRIPT", "LOAD", src)
			},
			"multi":   func(t *rapid.T) { run("MULTI") },
			"exec":    func(t *rapid.T) { run("EXEC") },
			"discard": func(t *rapid.T) { run("DISCARD") },
			"watch":   func(t *rapid.T) { run("WATCH", key()) },
			"select":  func(t *rapid.T) { run("SELECT", rapid.SampledFrom([]string{"0", "0", "1"}).Draw(t, "db")) },
			"eval": func(t *rapid.T) {
				src, _, rest := script()
				run(append([]string{"EVAL", src}, rest...)...)
			},
			"eval-again": func(t *rapid.T) {
				src, _, rest := script()
				run(append([]string{"EVAL", src}, rest...)...)
			},
			"eval-then-evalsha": func(t *rapid.T) {
				i := pick()
				src, sha, rest := argsFor(i)
				run(append([]string{"EVAL", src}, rest...)...)
				_, _, rest = argsFor(i)
				run(append([]string{"EVALSHA", sha}, rest...)...)
			},
			// Sessions are what algorithms do: acquire, then renew and
			// release the same lock as the same owner.
			"reentrant-session": func(t *rapid.T) {
				k, o := key(), owner()
				for range rapid.IntRange(1, 3).Draw(t, "acquires") {
					run("EVAL", ScriptReentrantAcquire, "1", k, ttl(), o)
				}
				for range rapid.IntRange(0, 4).Draw(t, "then") {
					src := rapid.SampledFrom([]string{ScriptReentrantRelease, ScriptReentrantRenew}).Draw(t, "op")
					if rapid.Bool().Draw(t, "evalsha") {
						run("EVALSHA", scriptSHA1(src), "1", k, ttl(), o)
					} else {
						run("EVAL", src, "1", k, ttl(), o)
					}
				}
			},
			"token-session": func(t *rapid.T) {
				k, o := key(), owner()
				run("SET", k, o, "NX", "PX", ttl())
				for range rapid.IntRange(0, 3).Draw(t, "then") {
					src := rapid.SampledFrom([]string{ScriptCompareAndPExpire, ScriptCompareAndDelete}).Draw(t, "op")
					args := []string{"EVAL", src, "1", k, owner()}
					if src == ScriptCompareAndPExpire {
						args = append(args, ttl())
					}
					run(args...)
				}
			},
			// redislock obtains (and re-obtains) a key, then refreshes
			// and releases it.
			"redislock-session": func(t *rapid.T) {
				k, v := key(), token()
				for range rapid.IntRange(1, 3).Draw(t, "obtains") {
					args := []string{"EVAL", ScriptRedislockObtain, "1", k, v, tokenLen(), ttl()}
					if rapid.Bool().Draw(t, "evalsha") {
						args[1] = scriptSHA1(ScriptRedislockObtain)
						args[0] = "EVALSHA"
					}
					run(args...)
					if rapid.Bool().Draw(t, "other") {
						v = token()
					}
				}
				for range rapid.IntRange(0, 2).Draw(t, "then") {
					args := []string{"EVAL", ScriptCompareAndPExpire, "1", k, v, ttl()}
					if rapid.Bool().Draw(t, "release") {
						args = []string{"EVAL", ScriptCompareAndDelete, "1", k, v}
					}
					run(args...)
				}
			},
			"evalsha": func(t *rapid.T) {
				_, sha, rest := script()
				switch rapid.IntRange(0, 5).Draw(t, "sha") {
				case 0:
					sha = strings.ToUpper(sha)
				case 1:
					sha = "0123456789abcdef0123456789abcdef01234567"
				}
				run(append([]string{"EVALSHA", sha}, rest...)...)
			},
		})
		p.checkSame(t)
		for k, v := range p.native.handled {
			total[k] += v
		}
	})

	// The proof means little if the fast path could pass it by never
	// answering: every script must have been run natively, by both routes.
	for _, s := range nativeList {
		for _, op := range []string{"EVAL", "EVALSHA"} {
			if total[op+" "+s.name] == 0 {
				t.Errorf("%s %s never handled natively (handled: %v)", op, s.name, total)
			}
		}
	}
	t.Logf("handled natively: %v", total)
}

// step is one command of a table case. For EVAL/EVALSHA, native says
// whether the fast path must answer it (true) or leave it to Lua (false).
type scriptStep struct {
	args   []string
	want   string // exact reply; "-" means any error; "" means not checked
	native bool
}

func plainCmd(args ...string) scriptStep { return scriptStep{args: args} }

func expectReply(want string, args ...string) scriptStep { return scriptStep{args: args, want: want} }

// nativeEval is a script call the fast path answers; luaEval one it leaves
// to Lua.
func nativeEval(want, src string, rest ...string) scriptStep {
	return scriptStep{args: append([]string{"EVAL", src}, rest...), want: want, native: true}
}

func luaEval(want, src string, rest ...string) scriptStep {
	return scriptStep{args: append([]string{"EVAL", src}, rest...), want: want}
}

func evalSHA(src string, native bool, want string, rest ...string) scriptStep {
	return scriptStep{args: append([]string{"EVALSHA", scriptSHA1(src)}, rest...), want: want, native: native}
}

func scriptSHA1(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

func TestNativeScripts(t *testing.T) {
	const (
		cad     = ScriptCompareAndDelete
		extend  = ScriptCompareAndPExpire
		acquire = ScriptReentrantAcquire
		release = ScriptReentrantRelease
		renew   = ScriptReentrantRenew
		obtain  = ScriptRedislockObtain
		null    = "$-1\r\n"
		zero    = ":0\r\n"
		one     = ":1\r\n"
	)
	cases := []struct {
		name  string
		steps []scriptStep
	}{
		{"cad/owner", []scriptStep{plainCmd("SET", "lock", "a", "PX", "1000"), nativeEval(one, cad, "1", "lock", "a"), expectReply(zero, "EXISTS", "lock")}},
		{"cad/other", []scriptStep{plainCmd("SET", "lock", "b"), nativeEval(zero, cad, "1", "lock", "a"), expectReply("$1\r\nb\r\n", "GET", "lock")}},
		{"cad/free", []scriptStep{nativeEval(zero, cad, "1", "lock", "a")}},
		{"cad/empty-token", []scriptStep{plainCmd("SET", "lock", ""), nativeEval(one, cad, "1", "lock", "")}},
		{"cad/hash", []scriptStep{plainCmd("HSET", "lock", "a", "1"), luaEval("-", cad, "1", "lock", "a")}},
		{"cad/no-token", []scriptStep{plainCmd("SET", "lock", "a"), luaEval(zero, cad, "1", "lock")}},
		{"cad/no-key", []scriptStep{luaEval("-", cad, "0", "a")}},

		{"cap/owner", []scriptStep{plainCmd("SET", "lock", "a", "PX", "1000"), nativeEval(one, extend, "1", "lock", "a", "5000"), expectReply(":5000\r\n", "PTTL", "lock")}},
		{"cap/other", []scriptStep{plainCmd("SET", "lock", "b", "PX", "1000"), nativeEval(zero, extend, "1", "lock", "a", "5000"), expectReply(":1000\r\n", "PTTL", "lock")}},
		{"cap/free", []scriptStep{nativeEval(zero, extend, "1", "lock", "a", "5000")}},
		{"cap/bad-ttl", []scriptStep{plainCmd("SET", "lock", "a", "PX", "1000"), luaEval("-", extend, "1", "lock", "a", "5s"), expectReply(":1000\r\n", "PTTL", "lock")}},
		{"cap/bad-ttl-other", []scriptStep{plainCmd("SET", "lock", "b"), nativeEval(zero, extend, "1", "lock", "a", "5s")}},
		{"cap/zero-ttl", []scriptStep{plainCmd("SET", "lock", "a"), nativeEval(one, extend, "1", "lock", "a", "0"), expectReply(zero, "EXISTS", "lock")}},

		{"acquire/free", []scriptStep{nativeEval(null, acquire, "1", "lock", "30000", "o1"), expectReply("$1\r\n1\r\n", "HGET", "lock", "o1"), expectReply(":30000\r\n", "PTTL", "lock")}},
		{"acquire/reenter", []scriptStep{plainCmd("HSET", "lock", "o1", "1"), plainCmd("PEXPIRE", "lock", "10"), nativeEval(null, acquire, "1", "lock", "30000", "o1"), expectReply("$1\r\n2\r\n", "HGET", "lock", "o1"), expectReply(":30000\r\n", "PTTL", "lock")}},
		{"acquire/busy", []scriptStep{plainCmd("HSET", "lock", "o2", "1"), plainCmd("PEXPIRE", "lock", "1000"), nativeEval(":1000\r\n", acquire, "1", "lock", "30000", "o1")}},
		{"acquire/busy-no-ttl", []scriptStep{plainCmd("HSET", "lock", "o2", "1"), nativeEval(":-1\r\n", acquire, "1", "lock", "30000", "o1")}},
		{"acquire/string", []scriptStep{plainCmd("SET", "lock", "x"), luaEval("-", acquire, "1", "lock", "30000", "o1")}},
		{"acquire/count-not-int", []scriptStep{plainCmd("HSET", "lock", "o1", "x"), luaEval("-", acquire, "1", "lock", "30000", "o1"), expectReply("$1\r\nx\r\n", "HGET", "lock", "o1")}},
		// Lua writes the count, then fails on the ttl: the hash stays, without TTL.
		{"acquire/bad-ttl", []scriptStep{luaEval("-", acquire, "1", "lock", "soon", "o1"), expectReply(":-1\r\n", "PTTL", "lock")}},
		{"acquire/zero-ttl", []scriptStep{nativeEval(null, acquire, "1", "lock", "0", "o1"), expectReply(zero, "EXISTS", "lock")}},
		{"acquire/busy-1ms-left", []scriptStep{plainCmd("HSET", "lock", "o2", "1"), plainCmd("PEXPIRE", "lock", "1"), nativeEval(":1\r\n", acquire, "1", "lock", "30000", "o1")}},

		{"release/free", []scriptStep{nativeEval(null, release, "1", "lock", "30000", "o1")}},
		{"release/other", []scriptStep{plainCmd("HSET", "lock", "o2", "1"), nativeEval(null, release, "1", "lock", "30000", "o1")}},
		{"release/reentered", []scriptStep{plainCmd("HSET", "lock", "o1", "2"), nativeEval(zero, release, "1", "lock", "30000", "o1"), expectReply("$1\r\n1\r\n", "HGET", "lock", "o1"), expectReply(":30000\r\n", "PTTL", "lock")}},
		{"release/last", []scriptStep{plainCmd("HSET", "lock", "o1", "1"), nativeEval(one, release, "1", "lock", "30000", "o1"), expectReply(zero, "EXISTS", "lock")}},
		{"release/zero-count", []scriptStep{plainCmd("HSET", "lock", "o1", "0"), nativeEval(one, release, "1", "lock", "30000", "o1"), expectReply(zero, "EXISTS", "lock")}},
		{"release/bad-ttl-last", []scriptStep{plainCmd("HSET", "lock", "o1", "1"), luaEval(one, release, "1", "lock", "soon", "o1")}},
		{"release/bad-ttl-reentered", []scriptStep{plainCmd("HSET", "lock", "o1", "2"), luaEval("-", release, "1", "lock", "soon", "o1"), expectReply("$1\r\n1\r\n", "HGET", "lock", "o1")}},
		{"release/count-not-int", []scriptStep{plainCmd("HSET", "lock", "o1", "x"), luaEval("-", release, "1", "lock", "30000", "o1")}},
		{"release/string", []scriptStep{plainCmd("SET", "lock", "x"), luaEval("-", release, "1", "lock", "30000", "o1")}},

		{"renew/held", []scriptStep{plainCmd("HSET", "lock", "o1", "1"), nativeEval(one, renew, "1", "lock", "30000", "o1"), expectReply(":30000\r\n", "PTTL", "lock")}},
		{"renew/other", []scriptStep{plainCmd("HSET", "lock", "o2", "1"), nativeEval(zero, renew, "1", "lock", "30000", "o1")}},
		{"renew/free", []scriptStep{nativeEval(zero, renew, "1", "lock", "30000", "o1")}},
		{"renew/bad-ttl", []scriptStep{plainCmd("HSET", "lock", "o1", "1"), luaEval("-", renew, "1", "lock", "soon", "o1")}},
		{"renew/string", []scriptStep{plainCmd("SET", "lock", "x"), luaEval("-", renew, "1", "lock", "30000", "o1")}},

		// bsm/redislock's obtain: free, re-obtained by the same token
		// (a value of token+metadata, ARGV[2] the token's length), taken
		// by another, and what only Lua answers.
		{"obtain/free", []scriptStep{nativeEval("+OK\r\n", obtain, "1", "lock", "tok:m1", "3", "2000"), expectReply(":2000\r\n", "PTTL", "lock")}},
		{"obtain/same-token", []scriptStep{plainCmd("SET", "lock", "tok:m1", "PX", "100"), nativeEval("+OK\r\n", obtain, "1", "lock", "tok:m2", "3", "2000"), expectReply("$6\r\ntok:m2\r\n", "GET", "lock"), expectReply(":2000\r\n", "PTTL", "lock")}},
		{"obtain/other-token", []scriptStep{plainCmd("SET", "lock", "abc:m1", "PX", "100"), nativeEval(null, obtain, "1", "lock", "tok:m2", "3", "2000"), expectReply(":100\r\n", "PTTL", "lock")}},
		{"obtain/short-value", []scriptStep{plainCmd("SET", "lock", "to"), nativeEval(null, obtain, "1", "lock", "tok", "3", "2000")}},
		{"obtain/hash", []scriptStep{plainCmd("HSET", "lock", "a", "1"), luaEval("-", obtain, "1", "lock", "tok", "3", "2000")}},
		{"obtain/bad-px", []scriptStep{luaEval("-", obtain, "1", "lock", "tok", "3", "soon"), expectReply(zero, "EXISTS", "lock")}},
		{"obtain/zero-len", []scriptStep{plainCmd("SET", "lock", "x"), luaEval("", obtain, "1", "lock", "tok", "0", "2000")}},
		{"obtain/evalsha", []scriptStep{nativeEval("+OK\r\n", obtain, "1", "lock", "tok", "3", "2000"), evalSHA(obtain, true, null, "1", "lock", "abc", "3", "2000")}},

		{"evalsha/not-loaded", []scriptStep{evalSHA(cad, false, "-", "1", "lock", "a")}},
		{"evalsha/after-eval", []scriptStep{nativeEval(zero, cad, "1", "lock", "a"), evalSHA(cad, true, zero, "1", "lock", "a")}},
		{"evalsha/after-flush", []scriptStep{nativeEval(zero, cad, "1", "lock", "a"), expectReply("+OK\r\n", "SCRIPT", "FLUSH"), evalSHA(cad, false, "-", "1", "lock", "a")}},
		{"evalsha/after-load", []scriptStep{plainCmd("SCRIPT", "LOAD", renew), evalSHA(renew, true, zero, "1", "lock", "30000", "o1")}},
		{"evalsha/failed-eval-not-cached", []scriptStep{plainCmd("SET", "lock", "x"), luaEval("-", renew, "1", "lock", "30000", "o1"), evalSHA(renew, false, "-", "1", "lock", "30000", "o1")}},
		{"multi/queued", []scriptStep{plainCmd("SET", "lock", "a"), expectReply("+OK\r\n", "MULTI"), luaEval("+QUEUED\r\n", cad, "1", "lock", "a"), expectReply("*1\r\n:1\r\n", "EXEC")}},
		{"select", []scriptStep{plainCmd("SELECT", "1"), plainCmd("SET", "lock", "a"), nativeEval(one, cad, "1", "lock", "a")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newScriptPair()
			defer p.Close()
			for i, s := range c.steps {
				got, handled := p.exec(t, 0, s.args...)
				switch {
				case s.want == "-" && !strings.HasPrefix(got, "-"):
					t.Fatalf("step %d %s: got %q, want an error", i, commandSummary(s.args), got)
				case s.want != "" && s.want != "-" && got != s.want:
					t.Fatalf("step %d %s: got %q, want %q", i, commandSummary(s.args), got, s.want)
				}
				if op := strings.ToUpper(s.args[0]); (op == "EVAL" || op == "EVALSHA") && handled != s.native {
					t.Fatalf("step %d %s: handled natively = %v, want %v (reply %q)", i, commandSummary(s.args), handled, s.native, got)
				}
			}
			p.checkSame(t)
		})
	}
}

// TestNativeScriptNames checks that traces name the scripts.
func TestNativeScriptNames(t *testing.T) {
	if got := ScriptName(ScriptReentrantRelease); got != "<reentrant-release>" {
		t.Fatalf("ScriptName = %q", got)
	}
}

func BenchmarkCompareAndDelete(b *testing.B) {
	for _, native := range []bool{true, false} {
		name := "lua"
		if native {
			name = "native"
		}
		b.Run(name, func(b *testing.B) {
			w := New(1)
			defer w.Close()
			n := w.NewRedisNode("A", nil)
			if native {
				n.ScriptFastPath = NativeScripts
			}
			peer := n.NewPeer()
			mr := n.Miniredis()
			args := []string{"EVAL", ScriptCompareAndDelete, "1", "lock", "token"}
			b.ReportAllocs()
			for b.Loop() {
				// Set directly (not a command) so the time is the EVAL's.
				mr.Set("lock", "token")
				if r := n.Exec(peer, args); string(r) != ":1\r\n" {
					b.Fatalf("reply %q", r)
				}
			}
		})
	}
}
