package sim

import "strings"

// A node's clock inside miniredis.
//
// miniredis keeps a key's TTL as a duration relative to the instant its
// TTLs were last advanced, and advancing them (FastForward, or the tick
// ClockTTL makes on every database access after the clock moved) walks
// and sorts the whole key list (RedisDB.fastForward). Nearly every
// command arrives at a new instant, so with ClockTTL every command paid
// for that walk: about 5% of an exploration's CPU (issue 24).
//
// So the node keeps two times. miniredis's clock (SetTime) is set to the
// node's local time before every command, as before: TIME, PXAT and EXAT,
// stream ids and key idle times read it. TTLs, though, are advanced by
// the node itself (ClockTTL off, FastForward), and only when the command
// about to run could tell: ttlBase is the local time the TTLs are
// relative to, and they are brought to the present (catchUp) before
//
//   - any command that reads a TTL or sets one from a relative amount
//     (PTTL, SET … PX, PEXPIRE, PEXPIREAT, a script miniredis's Lua runs),
//     that is any command not known to be blind to TTLs (ttlBlind);
//   - any command at all when a key's expiry has come: the shadow knows
//     every key's expiry on a master (effects.go), and expireSweep, which
//     runs before every command there, asks miniredis about each key whose
//     time has come (exists), so the key is gone before the command sees
//     it, as the tick would have removed it;
//   - any access to the dataset from outside a command (readKey's TTL,
//     expiry, replication, failover, Miniredis()).
//
// Why this changes no reply: advancing TTLs by a then by b is advancing
// them by a+b (FastForward subtracts, and removes the keys whose TTL
// reached zero — there are none in between, since catchUp runs whenever
// an expiry has come); a command blind to TTLs reads none and writes none
// from a relative amount (it deletes one, or keeps one as it is), so it
// does the same whatever base the TTLs are relative to. Hash field TTLs,
// other databases than 0 and Lua are outside what the shadow sees: a node
// where any of them appears advances its TTLs before every command from
// then on (clockEager), exactly as ClockTTL did.
// TestLazyTTLClockSameReplies checks it against a node that advances them
// before every command; the differential tests against redis-server and
// the golden trace digests check the whole.

// syncClock sets miniredis's time to the node's local time and brings the
// TTLs to the present: what every caller outside Exec needs.
func (n *RedisNode) syncClock() {
	n.noteClock()
	n.catchUp()
}

// noteClock sets miniredis's time to the node's local time before a
// command. A forward jump makes keys expire early, as in the Redlock
// clock-jump story. Real Redis stores absolute expiry times, so a backward
// jump makes every TTL longer by the jump; miniredis keeps relative TTLs,
// so we add it back.
func (n *RedisNode) noteClock() {
	local := n.Clock.Local(n.w.now)
	if back := n.lastLocal - local; back > 0 {
		n.catchUp() // the TTLs as they were at lastLocal
		for _, k := range n.mr.Keys() {
			if ttl := n.mr.TTL(k); ttl > 0 {
				n.mr.SetTTL(k, ttl+back)
			}
		}
		n.ttlBase = local
	}
	n.lastLocal = local
	n.mr.SetTime(Epoch.Add(local))
}

// catchUp advances miniredis's TTLs to the node's local time, expiring the
// keys whose time has come.
func (n *RedisNode) catchUp() {
	if d := n.lastLocal - n.ttlBase; d > 0 {
		n.mr.FastForward(d)
	}
	n.ttlBase = n.lastLocal
}

// resetMiniredis gives the node a new, empty miniredis at its local time
// (a new node, or a restart).
func (n *RedisNode) resetMiniredis() {
	local := n.Clock.Local(n.w.now)
	n.attachMiniredis(Epoch.Add(local))
	n.lastLocal, n.ttlBase = local, local
	n.clockEager = false
}

// clockBeforeExec brings the TTLs to the present before a client's command
// unless it, and everything it may run, is blind to them (expireSweep
// brings them when an expiry has come). Scripts the fast path may run are
// judged command by command as they run (Dispatch).
func (n *RedisNode) clockBeforeExec(args []string) {
	n.judged = false
	script := n.ScriptFastPath != nil && isScript(args)
	if !script && !n.clockEager && eagerFrom(args) {
		n.clockEager = true
	}
	if n.ttlBase == n.lastLocal {
		return
	}
	if n.clockEager || n.master != nil {
		n.catchUp()
		return
	}
	if script {
		// Dispatch judges the script's commands as the fast path runs
		// them; a script it leaves to miniredis's Lua makes the node
		// eager (run).
		return
	}
	if ttlBlind(args) || n.setNXOnHeldKey(args) {
		n.judged = true // Dispatch need not look at it again
		return
	}
	n.catchUp()
}

// clockBeforeDispatch is the same judgement for one command on its way to
// miniredis (a client's, a native script's inner call, an effect). The
// commands that make a node eager reach it only from Exec, which has
// seen them (a script left to Lua: run); effects of the stream are plain
// writes, and a node that applies raw ones is a replica.
func (n *RedisNode) clockBeforeDispatch(args []string) {
	if n.judged {
		n.judged = false
		return
	}
	if n.ttlBase == n.lastLocal {
		return
	}
	if n.clockEager || n.master != nil || !ttlBlind(args) {
		n.catchUp()
	}
}

// setNXOnHeldKey reports whether args is a SET … NX (without GET) of a key
// that exists: miniredis answers nil before looking at its TTL options, so
// it does not matter what the TTLs are relative to. Only for a client's
// command on a master, whose shadow is its dataset (a script's inner
// commands may have changed the key since).
func (n *RedisNode) setNXOnHeldKey(args []string) bool {
	if len(args) < 3 || upperName(args[0]) != "SET" {
		return false
	}
	nx := false
	for _, a := range args[3:] {
		switch {
		case strings.EqualFold(a, "NX"):
			nx = true
		case strings.EqualFold(a, "GET"):
			return false
		}
	}
	if !nx {
		return false
	}
	s, ok := n.shadow[args[1]]
	return ok && (s.expireAt == 0 || s.expireAt > n.lastLocal)
}

// ttlBlind reports whether a command reads no TTL and sets none from a
// relative amount or the clock: it keeps, copies or deletes TTLs only.
// Anything not listed is assumed to care.
func ttlBlind(args []string) bool {
	if len(args) == 0 {
		return true
	}
	name := upperName(args[0])
	if name == "SET" {
		// A SET without an expiry option clears the TTL.
		for _, a := range args[min(3, len(args)):] {
			if len(a) >= 2 && (a[1] == 'X' || a[1] == 'x' || a[1] == 'E' || a[1] == 'e') &&
				(strings.EqualFold(a, "EX") || strings.EqualFold(a, "PX") || strings.EqualFold(a, "EXAT") || strings.EqualFold(a, "PXAT") || strings.EqualFold(a, "KEEPTTL")) {
				return false
			}
		}
		return true
	}
	return blindCommands[name]
}

var blindCommands = map[string]bool{
	"GET": true, "EXISTS": true, "TYPE": true, "STRLEN": true, "MGET": true,
	"SETNX": true, "GETDEL": true, "DEL": true, "UNLINK": true,
	"INCR": true, "INCRBY": true, "DECR": true, "DECRBY": true,
	"HGET": true, "HMGET": true, "HGETALL": true, "HEXISTS": true, "HLEN": true, "HKEYS": true, "HVALS": true,
	"HSET": true, "HSETNX": true, "HMSET": true, "HINCRBY": true, "HDEL": true,
	"ZADD": true, "ZREM": true, "ZSCORE": true, "ZCARD": true, "ZRANGE": true, "ZRANGEBYSCORE": true, "ZREMRANGEBYSCORE": true, "ZRANK": true,
	"PING": true, "ECHO": true, "HELLO": true, "CLIENT": true, "AUTH": true, "QUIT": true,
	"MULTI": true, "DISCARD": true, "WATCH": true, "UNWATCH": true, "SCRIPT": true,
}

// eagerFrom reports whether a command takes the node where the shadow
// cannot see every TTL: another database, hash field TTLs, Lua (which may
// do either). From then on the node advances TTLs before every command.
func eagerFrom(args []string) bool {
	switch upperName(args[0]) {
	case "SELECT":
		return len(args) < 2 || args[1] != "0"
	case "SWAPDB", "MOVE", "COPY", "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO",
		"HEXPIRE", "HPEXPIRE", "HEXPIREAT", "HPEXPIREAT", "HSETEX", "HGETEX", "HPERSIST":
		return true
	}
	return false
}

// exists reports whether miniredis holds k, its TTLs brought to the present.
func (n *RedisNode) exists(k string) bool {
	n.catchUp()
	return n.mr.Exists(k)
}
