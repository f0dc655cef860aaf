package sim

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// The effect stream: what a node writes to its append-only file and ships to
// its replicas.
//
// Redis 7 propagates only what changed the dataset (propagatePendingCommands
// after call() with server.dirty > 0): a SET NX that finds the key taken, a
// DEL of a missing key or a PEXPIRE of a missing key propagate nothing.
// Relative expiries travel as absolute times on the master's clock
// (setGenericCommand rewrites SET … PX/EX into SET … PXAT; expireGenericCommand
// rewrites EXPIRE/PEXPIRE into PEXPIREAT), and a script is propagated as the
// write commands it ran (effects replication, the only mode left in Redis 7),
// never as the EVAL. A key that expires on the master reaches the replicas
// and the AOF as a DEL (propagateDeletion).
//
// The node gets all of that from one rule: after every write it compares
// each key the command may have touched with the state the stream last
// described (the shadow), and emits commands that rebuild the new state:
//
//	gone               DEL key
//	string changed     SET key value [PXAT ms]
//	hash changed       HSET key field value … / HDEL key field …
//	sorted set changed ZADD key score member … / ZREM key member …
//	only expiry moved  PEXPIREAT key ms   (PERSIST key when removed)
//
// On a replica that followed the stream from the start this gives exactly
// what Redis's propagated commands give. Where they differ is a replica that
// has diverged from its master (it lost part of the stream): Redis's INCR or
// HINCRBY would then apply relative to the replica's stale value, ours writes
// the master's value. Keys of other types (lists, sets, …) are not rebuilt:
// the command itself is propagated, with relative expiries made absolute.

// keyState is one key as the effect stream last described it.
type keyState struct {
	kind     string            // "string", "hash", "zset", or another Redis type (propagated raw)
	value    string            // string value
	fields   map[string]string // hash fields; a sorted set's members and their scores
	expireAt time.Duration     // absolute expiry on the node's clock, whole milliseconds since Epoch; 0: none
}

func (s keyState) equal(o keyState) bool {
	if s.kind != o.kind || s.value != o.value || s.expireAt != o.expireAt || len(s.fields) != len(o.fields) {
		return false
	}
	for f, v := range s.fields {
		if ov, ok := o.fields[f]; !ok || ov != v {
			return false
		}
	}
	return true
}

// readKey reads a key's state from miniredis. For a master the expiry comes
// from miniredis's TTL, as an absolute time in whole milliseconds (Redis's
// mstime); the node's TTL is then aligned to that instant, so the master
// expires the key exactly when a replica told "PXAT ms" would.
func (n *RedisNode) readKey(k string) (keyState, bool) {
	mr := n.mr.DB(0) // one clock tick here; the accessors below do not tick
	t := mr.Type(k)
	if t == "" {
		return keyState{}, false
	}
	s := keyState{kind: t}
	switch t {
	case "string":
		s.value, _ = mr.Get(k)
	case "hash":
		fields, _ := mr.HKeys(k)
		s.fields = make(map[string]string, len(fields))
		for _, f := range fields {
			s.fields[f] = mr.HGet(k, f)
		}
	case "zset":
		// A permit-expiring semaphore's leases (algorithms/
		// semaphore_expirable.go): scripts change them with ZADD and ZREM,
		// and Redis propagates exactly those.
		members, _ := mr.ZMembers(k)
		s.fields = make(map[string]string, len(members))
		for _, m := range members {
			score, _ := mr.ZScore(k, m)
			s.fields[m] = strconv.FormatFloat(score, 'f', -1, 64)
		}
	}
	if n.master != nil {
		// A replica's keys carry no TTL in miniredis (it never expires them
		// itself); the stream's expiry is kept in the shadow.
		if old, ok := n.shadow[k]; ok {
			s.expireAt = old.expireAt
		}
		return s, true
	}
	n.catchUp()
	if ttl := mr.TTL(k); ttl > 0 {
		local := n.Clock.Local(n.w.now)
		s.expireAt = (local + ttl).Truncate(time.Millisecond)
		if s.expireAt <= local {
			s.expireAt = local.Truncate(time.Millisecond) + time.Millisecond
		}
		if want := s.expireAt - local; want != ttl {
			mr.SetTTL(k, want) // once per new TTL: SetTTL also touches WATCH versions
		}
	}
	return s, true
}

// multiKeyWrites and singleKeyWrites are writes whose keys are args[1:]
// and args[1]; for any other write the node compares its whole dataset.
var multiKeyWrites = map[string]bool{"DEL": true, "UNLINK": true}

var singleKeyWrites = map[string]bool{
	"SET": true, "SETNX": true, "SETEX": true, "PSETEX": true, "GETSET": true, "GETDEL": true, "GETEX": true,
	"INCR": true, "INCRBY": true, "DECR": true, "DECRBY": true, "INCRBYFLOAT": true, "APPEND": true, "SETRANGE": true,
	"EXPIRE": true, "PEXPIRE": true, "EXPIREAT": true, "PEXPIREAT": true, "PERSIST": true,
	"HSET": true, "HSETNX": true, "HMSET": true, "HINCRBY": true, "HINCRBYFLOAT": true, "HDEL": true,
}

// touchedKeys lists the keys a write may have changed, sorted; all is true
// when the command does not say which: EXEC, FLUSHALL, and scripts, which
// Redis asks (but a standalone server does not force) to declare their
// keys in KEYS.
func touchedKeys(args []string) (keys []string, all bool) {
	cmd := strings.ToUpper(args[0])
	switch {
	case multiKeyWrites[cmd]:
		keys = append(keys, args[1:]...)
	case singleKeyWrites[cmd] && len(args) > 1:
		keys = append(keys, args[1])
	default:
		return nil, true
	}
	slices.Sort(keys)
	return slices.Compact(keys), false
}

// lastRun is what the node learnt from running a command, beyond its
// reply: which keys a native script wrote (scripts.go).
type lastRun struct {
	reply []byte
	// native is set when the script fast path ran the command: the key
	// it wrote, or an empty list when it wrote nothing.
	native []string
}

// writeKeys is touchedKeys for the command just run (n.last), narrowed by
// what its run says (issue 24: reading every key back from miniredis after
// each write was a tenth of a lock cycle):
//
//   - a script the fast path ran wrote only the key it names, or nothing,
//     where touchedKeys must assume any key (a script need not declare
//     its keys);
//   - a write whose reply says it did nothing (SET NX or XX that did not
//     set, DEL of missing keys, an expiry on a missing key) changed no key.
//
// Both are exact: the stream is compared with the dataset after every
// write, so before a command they agree, and a command that changed no key
// leaves them agreeing.
func (n *RedisNode) writeKeys(args []string) (keys []string, all bool) {
	if n.last.native != nil {
		return n.last.native, false
	}
	if unchangedByReply(args, n.last.reply) {
		return nil, false
	}
	return touchedKeys(args)
}

// unchangedByReply reports whether a write's reply proves it changed
// nothing.
func unchangedByReply(args []string, reply []byte) bool {
	switch upperName(args[0]) {
	case "SET":
		// SET replies nil only when NX or XX stopped it (with GET it
		// replies the old value, nil included, and may have set).
		if string(reply) != "$-1\r\n" {
			return false
		}
		for _, a := range args[3:] {
			if strings.EqualFold(a, "GET") {
				return false
			}
		}
		return true
	case "SETNX", "DEL", "UNLINK", "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST":
		return string(reply) == ":0\r\n"
	}
	return false
}

// propagate compares the keys a write may have touched with the shadow and
// emits the effects. raw is the command itself, used only for key types the
// stream does not rebuild.
func (n *RedisNode) propagate(raw []string) {
	keys, all := n.writeKeys(raw)
	if all {
		keys = n.allKeys()
	}
	rawSent := false
	for _, k := range keys {
		old, had := n.shadow[k]
		cur, has := n.readKey(k)
		switch {
		case !had && !has:
			continue
		case had && has && old.equal(cur):
			continue
		}
		if has && !rebuilt[cur.kind] {
			if !rawSent {
				n.emit(absoluteExpiry(raw, n.Clock.Local(n.w.now)))
				rawSent = true // the raw command carries every key's change
			}
		} else if !rawSent {
			for _, c := range rebuild(k, old, had, cur, has) {
				n.emit(c)
			}
		}
		if has {
			n.shadow[k] = cur
		} else {
			delete(n.shadow, k)
		}
	}
}

// rebuilt are the key types the effect stream rebuilds from their state;
// others are propagated as the raw command.
var rebuilt = map[string]bool{"string": true, "hash": true, "zset": true}

// allKeys is the union of the dataset's keys and the shadow's, sorted.
func (n *RedisNode) allKeys() []string {
	keys := n.mr.Keys()
	for k := range n.shadow {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// rebuild returns the commands that turn old into cur.
func rebuild(k string, old keyState, had bool, cur keyState, has bool) [][]string {
	if !has {
		return [][]string{{"DEL", k}}
	}
	var out [][]string
	if had && old.kind != cur.kind {
		out = append(out, []string{"DEL", k})
		had = false
	}
	switch cur.kind {
	case "string":
		if !had || old.value != cur.value {
			c := []string{"SET", k, cur.value}
			if cur.expireAt > 0 {
				c = append(c, "PXAT", msString(cur.expireAt))
			}
			return append(out, c)
		}
	case "hash":
		var set, del []string
		for _, f := range sortedFields(cur.fields) {
			if v, ok := old.fields[f]; !had || !ok || v != cur.fields[f] {
				set = append(set, f, cur.fields[f])
			}
		}
		if had {
			for _, f := range sortedFields(old.fields) {
				if _, ok := cur.fields[f]; !ok {
					del = append(del, f)
				}
			}
		}
		if len(set) > 0 {
			out = append(out, append([]string{"HSET", k}, set...))
		}
		if len(del) > 0 {
			out = append(out, append([]string{"HDEL", k}, del...))
		}
	case "zset":
		var add, rem []string
		for _, m := range sortedFields(cur.fields) {
			if v, ok := old.fields[m]; !had || !ok || v != cur.fields[m] {
				add = append(add, cur.fields[m], m)
			}
		}
		if had {
			for _, m := range sortedFields(old.fields) {
				if _, ok := cur.fields[m]; !ok {
					rem = append(rem, m)
				}
			}
		}
		if len(add) > 0 {
			out = append(out, append([]string{"ZADD", k}, add...))
		}
		if len(rem) > 0 {
			out = append(out, append([]string{"ZREM", k}, rem...))
		}
	}
	oldExp := old.expireAt
	if !had {
		oldExp = 0
	}
	switch {
	case cur.expireAt != oldExp && cur.expireAt > 0:
		out = append(out, []string{"PEXPIREAT", k, msString(cur.expireAt)})
	case cur.expireAt == 0 && oldExp > 0:
		out = append(out, []string{"PERSIST", k})
	}
	return out
}

func sortedFields(m map[string]string) []string {
	fs := make([]string, 0, len(m))
	for f := range m {
		fs = append(fs, f)
	}
	slices.Sort(fs)
	return fs
}

// msString renders a local reading (a duration since Epoch) as Redis's
// absolute times are written: Unix milliseconds.
func msString(d time.Duration) string { return strconv.FormatInt(Epoch.Add(d).UnixMilli(), 10) }

// parseUnixMs reads Unix milliseconds back into a local reading.
func parseUnixMs(s string) time.Duration {
	v, _ := strconv.ParseInt(s, 10, 64)
	return time.UnixMilli(v).Sub(Epoch)
}

// absoluteExpiry rewrites relative expiries of a raw command as Redis does
// before propagating it (SET … PX/EX → PXAT, EXPIRE/PEXPIRE → PEXPIREAT).
func absoluteExpiry(args []string, local time.Duration) []string {
	out := slices.Clone(args)
	base := local.Truncate(time.Millisecond)
	switch strings.ToUpper(args[0]) {
	case "SET":
		for i := 3; i+1 < len(out); i++ {
			unit := time.Duration(0)
			switch strings.ToUpper(out[i]) {
			case "PX":
				unit = time.Millisecond
			case "EX":
				unit = time.Second
			}
			if v, err := strconv.ParseInt(out[i+1], 10, 64); unit != 0 && err == nil {
				out[i], out[i+1] = "PXAT", msString(base+time.Duration(v)*unit)
			}
		}
	case "EXPIRE", "PEXPIRE":
		unit := time.Millisecond
		if strings.EqualFold(args[0], "EXPIRE") {
			unit = time.Second
		}
		if v, err := strconv.ParseInt(args[2], 10, 64); len(args) >= 3 && err == nil {
			out[0], out[2] = "PEXPIREAT", msString(base+time.Duration(v)*unit)
		}
	}
	return out
}

// emit appends one effect to the AOF and hands it to the replication hooks.
func (n *RedisNode) emit(args []string) {
	n.offset++
	n.aof = append(n.aof, aofEntry{at: n.w.now, args: args})
	for _, l := range n.links {
		n.ship(l, args, n.offset)
	}
	for _, f := range n.onWrite {
		f(args)
	}
}

// applyEffect runs one command of the effect stream on a node that follows
// it (a replica, or a node replaying its AOF). A replica keeps keys without
// a TTL in miniredis and the absolute expiry in the shadow: it never expires
// a key itself (Redis: only the master's DEL removes it), but it answers
// reads of a key whose expiry its own clock has passed as missing.
func (n *RedisNode) applyEffect(args []string) {
	k := ""
	if len(args) > 1 {
		k = args[1]
	}
	old, had := n.shadow[k]
	exp := old.expireAt
	run := args
	switch strings.ToUpper(args[0]) {
	case "SET":
		exp = 0
		if len(args) == 5 && strings.EqualFold(args[3], "PXAT") {
			exp = parseUnixMs(args[4])
			run = args[:3]
		}
	case "PEXPIREAT":
		if !had {
			return
		}
		exp = parseUnixMs(args[2])
		run = nil
	case "PERSIST":
		exp, run = 0, nil
	case "DEL":
		exp = 0
	}
	if run != nil {
		n.dispatchEffect(run)
	}
	if cur, ok := n.readKey(k); ok {
		cur.expireAt = exp
		n.shadow[k] = cur
	} else {
		delete(n.shadow, k)
	}
	n.offset++
	n.aof = append(n.aof, aofEntry{at: n.w.now, args: args})
}

func (n *RedisNode) dispatchEffect(args []string) {
	if n.effectPeer == nil {
		n.effectPeer = n.NewPeer()
	}
	n.Dispatch(n.effectPeer, args)
}
