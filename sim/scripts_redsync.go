package sim

import (
	"crypto/sha1"
	"encoding/hex"
)

// The scripts of github.com/go-redsync/redsync/v4 (v4.18.1, scripts.go),
// byte for byte, so that a redsync run takes the native fast path instead
// of a fresh Lua VM per release and extend: without them Lua was 40% of a
// bubble run. (Extend under WithSetNXOnExtend stays in Lua.) TestNativeScriptsEquivalent covers them with the others.
const (
	// ScriptRedsyncDelete is redsync's release: 1 deleted, 0 someone
	// else's value, -1 no key at all (redsync's ErrLockAlreadyExpired).
	ScriptRedsyncDelete = `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`
	// ScriptRedsyncTouch is redsync's Extend: PEXPIRE if the value is ours.
	ScriptRedsyncTouch = `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
`
)

func init() {
	for _, s := range []*nativeScript{
		{name: "redsync-delete", src: ScriptRedsyncDelete, argc: 1, run: redsyncDelete},
		{name: "redsync-touch", src: ScriptRedsyncTouch, argc: 2, run: compareAndPExpire},
	} {
		sum := sha1.Sum([]byte(s.src))
		s.sha = hex.EncodeToString(sum[:])
		nativeList = append(nativeList, s)
		nativeBySrc[s.src] = s
		nativeBySHA[s.sha] = s
		NameScript(s.src, s.name)
	}
}

func redsyncDelete(c *innerCalls, key string, argv []string) ([]byte, bool) {
	v, found, ok := c.bulk("GET", key)
	if !ok {
		return nil, false
	}
	if !found {
		return intReply(-1), true
	}
	if v != argv[0] {
		return intReply(0), true
	}
	r, ok := c.write("DEL", key)
	if !ok {
		return nil, false
	}
	return c.luaInt(r)
}
