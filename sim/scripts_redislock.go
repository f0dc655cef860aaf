package sim

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
)

// The obtain script of github.com/bsm/redislock (v0.9.4, redislock.go),
// byte for byte, so that a redislock run takes the native fast path: in
// Lua it was 60% of a bubble run's CPU (a fresh VM per EVALSHA; issue 39,
// docs/performance.md). redislock's release and refresh are
// ScriptCompareAndDelete and ScriptCompareAndPExpire, native already. The
// script gets no trace name (NameScript): a run's trace, and the digest of
// every saved redislock counterexample, stay what they were.
// TestNativeScriptsEquivalent covers it with the others.
const ScriptRedislockObtain = `
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end

local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
`

func init() {
	s := &nativeScript{name: "redislock-obtain", src: ScriptRedislockObtain, argc: 3, run: redislockObtain}
	sum := sha1.Sum([]byte(s.src))
	s.sha = hex.EncodeToString(sum[:])
	nativeList = append(nativeList, s)
	nativeBySrc[s.src] = s
	nativeBySHA[s.sha] = s
}

var okReply = []byte("+OK\r\n")

// redislockObtain takes a free key (SET NX PX), or re-takes one whose
// value starts with the same token (ARGV[2] is the token's length: the
// holder obtaining again), else answers nil. Only a token length written
// as a plain positive decimal is native: Lua's tonumber and string.sub
// read anything else in ways not worth copying, and Lua answers it.
func redislockObtain(c *innerCalls, key string, argv []string) ([]byte, bool) {
	value, offsetArg, px := argv[0], argv[1], argv[2]
	offset, ok := plainPositive(offsetArg)
	if !ok {
		return nil, false
	}
	switch r := c.do("SET", key, value, "NX", "PX", px); string(r) {
	case string(okReply):
		c.wrote = true
		return okReply, true
	case string(nullReply):
		// Taken: SET NX wrote nothing, so Lua can still answer below.
	default:
		return nil, false // a bad PX: Lua raises the error
	}
	have, _, ok := c.bulk("GETRANGE", key, "0", strconv.Itoa(offset-1))
	if !ok {
		return nil, false // WRONGTYPE: Lua raises it
	}
	if have != value[:min(offset, len(value))] {
		return nullReply, true
	}
	r, ok := c.write("SET", key, value, "PX", px)
	if !ok || string(r) != string(okReply) {
		return nil, false
	}
	return okReply, true
}

// plainPositive parses 1 to 999999 written without sign, spaces or
// leading zeros.
func plainPositive(s string) (int, bool) {
	if len(s) == 0 || len(s) > 6 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}
