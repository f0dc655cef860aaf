package sim

import "strings"

// Command names. go-redis sends them in lower case ("set", "evalsha") and
// every layer that reads one (the node, miniredis's dispatcher, its
// read-only table, the effect stream) upper-cases it again: about eight
// allocations per command, a tenth of what a lock cycle allocates. The
// node upper-cases a known name once, on arrival (canonical), after which
// strings.ToUpper finds nothing to change and allocates nothing.

// upperNames maps the lower-case spelling of the commands lock code sends
// to their upper-case form. Only names miniredis knows are listed: for an
// unknown command miniredis quotes the name as sent in its error, which
// must not change.
var upperNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		"GET", "SET", "SETNX", "SETEX", "PSETEX", "GETSET", "GETDEL", "GETEX", "DEL", "UNLINK", "EXISTS", "TYPE",
		"INCR", "INCRBY", "DECR", "DECRBY", "APPEND",
		"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST", "TTL", "PTTL",
		"HSET", "HSETNX", "HMSET", "HGET", "HGETALL", "HDEL", "HEXISTS", "HINCRBY", "HLEN", "HKEYS", "HVALS",
		"ZADD", "ZREM", "ZRANK", "ZCARD", "ZRANGE", "ZREMRANGEBYSCORE", "ZINTERSTORE", "ZSCORE",
		"EVAL", "EVALSHA", "SCRIPT", "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH",
		"PING", "ECHO", "SELECT", "HELLO", "TIME", "WAIT", "INFO",
	} {
		m[strings.ToLower(n)] = n
	}
	return m
}()

// upperName is strings.ToUpper(name) without an allocation for the names
// in upperNames.
func upperName(name string) string {
	if u, ok := upperNames[name]; ok {
		return u
	}
	return strings.ToUpper(name)
}

// canonical returns args with a known command name in upper case, as a new
// slice when it changed (the caller's slice is also the trace's record).
func canonical(args []string) []string {
	if len(args) == 0 {
		return args
	}
	u, ok := upperNames[args[0]]
	if !ok {
		return args
	}
	out := make([]string, len(args))
	out[0] = u
	copy(out[1:], args[1:])
	return out
}
