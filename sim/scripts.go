package sim

import (
	"crypto/sha1"
	"encoding/hex"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2/server"
)

// The lock scripts every Redis lock library carries in some form. Algorithms
// use these constants so that NativeScripts recognises them: the text is the
// contract, byte for byte (EVALSHA matches on its SHA1).
const (
	// ScriptCompareAndDelete releases a lock only if it still holds our token
	// (KEYS[1] = lock, ARGV[1] = token). Replies 1 if it deleted, else 0.
	ScriptCompareAndDelete = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

	// ScriptCompareAndPExpire extends a lock only if it still holds our token
	// (ARGV[1] = token, ARGV[2] = ttl in ms). Replies 1 if it extended, else 0.
	ScriptCompareAndPExpire = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`

	// ScriptReentrantAcquire is Redisson's reentrant lock: a hash from owner id
	// to hold count (ARGV[1] = ttl in ms, ARGV[2] = owner id). Replies nil when
	// acquired (or re-entered), else the holder's remaining ttl in ms.
	ScriptReentrantAcquire = `if (redis.call("exists", KEYS[1]) == 0) or (redis.call("hexists", KEYS[1], ARGV[2]) == 1) then redis.call("hincrby", KEYS[1], ARGV[2], 1); redis.call("pexpire", KEYS[1], ARGV[1]); return nil; end; return redis.call("pttl", KEYS[1]);`

	// ScriptReentrantRelease undoes one ScriptReentrantAcquire. Replies nil if
	// the owner does not hold the lock, 0 if it still holds it (count > 0,
	// ttl refreshed), 1 if the lock was deleted.
	ScriptReentrantRelease = `if (redis.call("hexists", KEYS[1], ARGV[2]) == 0) then return nil; end; local counter = redis.call("hincrby", KEYS[1], ARGV[2], -1); if (counter > 0) then redis.call("pexpire", KEYS[1], ARGV[1]); return 0; else redis.call("del", KEYS[1]); return 1; end;`

	// ScriptReentrantRenew is the watchdog's renewal of a reentrant lock.
	// Replies 1 if the owner holds it (ttl refreshed), else 0.
	ScriptReentrantRenew = `if (redis.call("hexists", KEYS[1], ARGV[2]) == 1) then redis.call("pexpire", KEYS[1], ARGV[1]); return 1; end; return 0;`
)

// A native script is the logic of one Lua script written against the same
// inner commands the script issues. It exists because miniredis builds a
// fresh Lua VM for every EVAL (about 90 µs, sixty times a SET NX PX + DEL
// cycle), so scripts would dominate the cost of every run and of every
// shrinking step. TestNativeScriptsEquivalent is the proof that a native
// script answers and leaves the dataset exactly as miniredis's Lua does.
type nativeScript struct {
	name string
	src  string
	sha  string
	argc int // len(ARGV); every script takes exactly one key
	run  func(c *innerCalls, key string, argv []string) (reply []byte, ok bool)
}

var (
	nativeList  []*nativeScript
	nativeBySrc = map[string]*nativeScript{}
	nativeBySHA = map[string]*nativeScript{}
)

func init() {
	for _, s := range []*nativeScript{
		{name: "compare-and-delete", src: ScriptCompareAndDelete, argc: 1, run: compareAndDelete},
		{name: "compare-and-pexpire", src: ScriptCompareAndPExpire, argc: 2, run: compareAndPExpire},
		{name: "reentrant-acquire", src: ScriptReentrantAcquire, argc: 2, run: reentrantAcquire},
		{name: "reentrant-release", src: ScriptReentrantRelease, argc: 2, run: reentrantRelease},
		{name: "reentrant-renew", src: ScriptReentrantRenew, argc: 2, run: reentrantRenew},
	} {
		sum := sha1.Sum([]byte(s.src))
		s.sha = hex.EncodeToString(sum[:])
		nativeList = append(nativeList, s)
		nativeBySrc[s.src] = s
		nativeBySHA[s.sha] = s
		NameScript(s.src, s.name)
	}
}

// NativeScripts is a RedisNode.ScriptFastPath for the scripts above. It
// answers only when it can give miniredis's exact reply and effect; in every
// other case (unknown script, odd arguments, a transaction, an inner error)
// it returns handled = false having written nothing, and miniredis's Lua
// produces the real reply, error text included.
func NativeScripts(n *RedisNode, peer *server.Peer, args []string) (reply []byte, handled bool) {
	if len(args) < 3 {
		return nil, false
	}
	var s *nativeScript
	evalsha := false
	switch strings.ToUpper(args[0]) {
	case "EVAL":
		s = nativeBySrc[args[1]]
	case "EVALSHA":
		s, evalsha = nativeBySHA[args[1]], true
	}
	// Lua would accept other spellings of numkeys ("01", "+1") and extra
	// arguments; nobody sends them, so they are left to Lua.
	if s == nil || args[2] != "1" || len(args) != 4+s.argc {
		return nil, false
	}
	if !plainConnection(peer) {
		return nil, false
	}
	c := &innerCalls{n: n, peer: peer}
	// Ask before running: a check that fails after a write could not fall
	// back.
	loaded, ok := c.scriptLoaded(s.sha)
	if !ok || (evalsha && !loaded) {
		return nil, false // EVALSHA of a flushed script: miniredis says NOSCRIPT
	}
	reply, ok = s.run(c, args[3], args[4:])
	if !ok {
		return nil, false
	}
	// Every native script writes only its one key (writeKeys).
	n.last.native = noKeys
	if c.wrote {
		n.last.native = []string{args[3]}
	}
	if !evalsha && !loaded {
		// A successful EVAL caches its script; a later EVALSHA must find it.
		c.must("SCRIPT", "LOAD", s.src)
		n.noteLoaded(s.sha)
	}
	return reply, true
}

// plainConnection reports whether a command on peer runs at once, as a
// script's inner calls do. Inside MULTI an EVAL is queued, so its inner
// commands must not run now; a subscribed or RESP3 connection replies
// differently. miniredis keeps that state private, so it is read by
// reflection; if its layout ever changes, the fast path turns itself off
// (and the handled-count assertions in the tests fail) rather than guess.
func plainConnection(peer *server.Peer) bool {
	if peer.Resp3 || peer.SwitchResp3 != nil {
		return false
	}
	if peer.Ctx == nil {
		return true
	}
	v := reflect.ValueOf(peer.Ctx)
	l, ok := connLayoutOf(v.Type())
	if !ok {
		return false
	}
	ctx := v.Elem()
	return ctx.FieldByIndex(l.transaction).IsNil() &&
		ctx.FieldByIndex(l.subscriber).IsNil() &&
		!ctx.FieldByIndex(l.nested).Bool()
}

type connLayout struct {
	transaction, subscriber, nested []int
}

var connLayouts sync.Map // reflect.Type → *connLayout (nil if unknown)

func connLayoutOf(t reflect.Type) (*connLayout, bool) {
	if l, ok := connLayouts.Load(t); ok {
		l := l.(*connLayout)
		return l, l != nil
	}
	var l *connLayout
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		st := t.Elem()
		tx, ok1 := st.FieldByName("transaction")
		sub, ok2 := st.FieldByName("subscriber")
		nested, ok3 := st.FieldByName("nested")
		if ok1 && ok2 && ok3 &&
			tx.Type.Kind() == reflect.Slice &&
			sub.Type.Kind() == reflect.Pointer &&
			nested.Type.Kind() == reflect.Bool {
			l = &connLayout{transaction: tx.Index, subscriber: sub.Index, nested: nested.Index}
		}
	}
	connLayouts.Store(t, l)
	return l, l != nil
}

// innerCalls issues a script's inner commands on the client's connection
// (same database, same authentication, as miniredis's Lua does).
//
// The rule that makes falling back safe: a command that fails changes
// nothing, so reads and the first write may fail (we fall back and Lua
// replays them with the same outcome), but a write after the first must be
// known to succeed before the first is made. write enforces it.
type innerCalls struct {
	n     *RedisNode
	peer  *server.Peer
	wrote bool
}

func (c *innerCalls) do(args ...string) []byte { return c.n.Dispatch(c.peer, args) }

// must runs a command that cannot fail once the script has begun writing.
func (c *innerCalls) must(args ...string) []byte {
	r := c.do(args...)
	if len(r) == 0 || r[0] == '-' {
		panic("sim: native script diverged from Lua: " + strings.Join(args, " ") + " → " + strings.TrimSpace(string(r)))
	}
	return r
}

// write runs a write command; ok is false if it failed before any write
// was made, so the caller can still fall back.
func (c *innerCalls) write(args ...string) (reply []byte, ok bool) {
	if c.wrote {
		return c.must(args...), true
	}
	r := c.do(args...)
	if len(r) == 0 || r[0] == '-' {
		return nil, false
	}
	c.wrote = true
	return r, true
}

// integer runs a command with an integer reply.
func (c *innerCalls) integer(args ...string) (int, bool) { return parseInt(c.do(args...)) }

// bulk runs a command with a bulk reply; found is false for nil.
func (c *innerCalls) bulk(args ...string) (s string, found, ok bool) {
	return parseBulk(c.do(args...))
}

func (c *innerCalls) scriptLoaded(sha string) (loaded, ok bool) {
	// A script known loaded stays loaded until a SCRIPT command or an EXEC
	// (which may hold one) runs, or the dataset is replaced (Exec and
	// Restart forget the cache then): asking miniredis every time cost a
	// dispatch per EVAL.
	if c.n.loadedScripts[sha] {
		return true, true
	}
	r := c.do("SCRIPT", "EXISTS", sha)
	switch string(r) {
	case "*1\r\n:1\r\n":
		c.n.noteLoaded(sha)
		return true, true
	case "*1\r\n:0\r\n":
		return false, true
	}
	return false, false
}

func compareAndDelete(c *innerCalls, key string, argv []string) ([]byte, bool) {
	v, found, ok := c.bulk("GET", key)
	if !ok {
		return nil, false // WRONGTYPE: Lua raises it
	}
	if !found || v != argv[0] {
		return intReply(0), true
	}
	r, ok := c.write("DEL", key)
	if !ok {
		return nil, false
	}
	return c.luaInt(r)
}

func compareAndPExpire(c *innerCalls, key string, argv []string) ([]byte, bool) {
	v, found, ok := c.bulk("GET", key)
	if !ok {
		return nil, false
	}
	if !found || v != argv[0] {
		return intReply(0), true
	}
	r, ok := c.write("PEXPIRE", key, argv[1]) // a bad ttl fails here, before any write
	if !ok {
		return nil, false
	}
	return c.luaInt(r)
}

func reentrantAcquire(c *innerCalls, key string, argv []string) ([]byte, bool) {
	ttl, owner := argv[0], argv[1]
	exists, ok := c.integer("EXISTS", key)
	if !ok {
		return nil, false
	}
	if exists != 0 {
		held, ok := c.integer("HEXISTS", key, owner)
		if !ok {
			return nil, false // a string under the key: WRONGTYPE
		}
		if held != 1 {
			return c.luaInt(c.do("PTTL", key))
		}
	}
	// PEXPIRE is the second write; its only failure is a ttl that is not an
	// integer, so that is checked before the first.
	if !isInt(ttl) {
		return nil, false
	}
	if _, ok := c.write("HINCRBY", key, owner, "1"); !ok {
		return nil, false // the count is not an integer
	}
	c.must("PEXPIRE", key, ttl)
	return nullReply, true
}

func reentrantRelease(c *innerCalls, key string, argv []string) ([]byte, bool) {
	ttl, owner := argv[0], argv[1]
	held, ok := c.integer("HEXISTS", key, owner)
	if !ok {
		return nil, false
	}
	if held == 0 {
		return nullReply, true
	}
	// Whether PEXPIRE runs depends on the count after the first write, so a
	// bad ttl is refused up front even when Lua would not have used it.
	if !isInt(ttl) {
		return nil, false
	}
	r, ok := c.write("HINCRBY", key, owner, "-1")
	if !ok {
		return nil, false
	}
	counter, ok := parseInt(r)
	if !ok {
		panic("sim: native script diverged from Lua: HINCRBY replied " + string(r))
	}
	if counter > 0 {
		c.must("PEXPIRE", key, ttl)
		return intReply(0), true
	}
	c.must("DEL", key)
	return intReply(1), true
}

func reentrantRenew(c *innerCalls, key string, argv []string) ([]byte, bool) {
	ttl, owner := argv[0], argv[1]
	held, ok := c.integer("HEXISTS", key, owner)
	if !ok {
		return nil, false
	}
	if held != 1 {
		return intReply(0), true
	}
	if _, ok := c.write("PEXPIRE", key, ttl); !ok {
		return nil, false
	}
	return intReply(1), true
}

var nullReply = []byte("$-1\r\n") // Lua nil and false, in RESP2

// noKeys is a native script's write set when it wrote nothing: empty, not
// nil (nil means no native script ran).
var noKeys = []string{}

func intReply(v int) []byte {
	b := make([]byte, 0, 24)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(v), 10)
	return append(b, '\r', '\n')
}

// luaInt is what an integer reply becomes when a script returns it:
// miniredis turns it into a Lua number (a float64) and back.
func (c *innerCalls) luaInt(r []byte) ([]byte, bool) {
	v, ok := parseInt(r)
	if !ok {
		if c.wrote {
			panic("sim: native script diverged from Lua: expected an integer, got " + string(r))
		}
		return nil, false
	}
	f := float64(v)
	return intReply(int(f)), true
}

// isInt is miniredis's test for an integer argument.
func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func parseInt(r []byte) (int, bool) {
	if len(r) < 4 || r[0] != ':' || r[len(r)-2] != '\r' || r[len(r)-1] != '\n' {
		return 0, false
	}
	v, err := strconv.Atoi(string(r[1 : len(r)-2]))
	return v, err == nil
}

func parseBulk(r []byte) (s string, found, ok bool) {
	if string(r) == "$-1\r\n" {
		return "", false, true
	}
	if len(r) < 4 || r[0] != '$' {
		return "", false, false
	}
	i := strings.Index(string(r), "\r\n")
	if i < 0 {
		return "", false, false
	}
	size, err := strconv.Atoi(string(r[1:i]))
	body := r[i+2:]
	if err != nil || size < 0 || len(body) != size+2 {
		return "", false, false
	}
	return string(body[:size]), true, true
}
