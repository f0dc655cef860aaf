package sim

import (
	"bufio"
	"bytes"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// RedisNode is a simulated Redis server: a miniredis instance (so commands and
// Lua scripts behave as Redis does) whose notion of time is the node's own
// Clock. Commands arrive as simulated messages and run at their arrival time.
type RedisNode struct {
	Name  string
	Host  *Host
	Clock *Clock

	// ScriptFastPath, when set, is offered every EVAL/EVALSHA first; it runs
	// well-known lock scripts natively (see scripts.go) and returns handled =
	// false for anything else, which then goes to miniredis's Lua.
	ScriptFastPath func(n *RedisNode, peer *server.Peer, args []string) (reply []byte, handled bool)

	// Commands counts the commands executed.
	Commands int
	// Refused counts client writes refused with NOREPLICAS
	// (min-replicas-to-write): the availability that setting costs.
	Refused int

	// MinReplicasToWrite and MinReplicasMaxLag are Redis's
	// min-replicas-to-write and min-replicas-max-lag: with N > 0 the master
	// refuses writes (NOREPLICAS) unless at least N replicas acknowledged
	// the stream within the lag, measured in whole seconds on its clock.
	MinReplicasToWrite int
	MinReplicasMaxLag  time.Duration

	w *World
	// loadedScripts caches which native scripts miniredis has loaded.
	loadedScripts map[string]bool
	onWrite       []func(args []string)
	master        *RedisNode // set on a replica
	promoted      *RedisNode // set on a failed-over master: clients now reach this node
	aof           []aofEntry
	crashedAt     time.Duration
	mr            *miniredis.Miniredis
	out           bytes.Buffer
	lastLocal     time.Duration
	up            bool
	conns         []*redisConn

	// The effect stream (effects.go): the state it last described, its
	// length, and the replicas that follow it.
	shadow      map[string]keyState
	offset      int64
	effectPeer  *server.Peer
	expiryTimer bool
	links       []*replicaLink
	waits       []*waitRequest
	acking      bool
	applyPeer   *server.Peer
	incarnation int // bumped by Crash
	// last is what the node knows of the command run last (writeKeys).
	last lastRun
	// hooked is the miniredis instance commandCompat is installed on.
	hooked *miniredis.Miniredis
	// The TTL clock (redis_clock.go): the local time miniredis's TTLs are
	// relative to; whether the node advances them before every command;
	// whether Exec judged the command Dispatch is about to run.
	ttlBase    time.Duration
	clockEager bool
	judged     bool
	// ticket says whether mr may be reused once the node is gone
	// (redis_pool.go).
	ticket *miniredisTicket
}

// NewRedisNode starts a Redis node on a new host called name.
func (w *World) NewRedisNode(name string, clock *Clock) *RedisNode {
	h := w.NewHost(name, clock)
	n := &RedisNode{Name: name, Host: h, Clock: h.Clock, w: w, up: true, shadow: map[string]keyState{}}
	n.resetMiniredis()
	return n
}

// Miniredis exposes the node's dataset, for checks and for replication,
// with its TTLs as of the node's last command.
func (n *RedisNode) Miniredis() *miniredis.Miniredis {
	n.ticket.handed.Store(true) // the caller may keep it: never reused
	n.catchUp()
	return n.mr
}

// Up reports whether the node is running.
func (n *RedisNode) Up() bool { return n.up }

// Exec runs one command on the node now, as if from the given connection
// peer, and returns the RESP reply. A write is followed by its effects on
// the AOF and the replication stream (effects.go); a replica refuses client
// writes as Redis's replica-read-only does.
func (n *RedisNode) Exec(peer *server.Peer, args []string) []byte {
	n.noteClock()
	n.Commands++
	if len(args) == 0 {
		n.catchUp()
		return n.Dispatch(peer, args)
	}
	args = canonical(args)
	n.clockBeforeExec(args)
	if n.loadedScripts != nil {
		switch strings.ToUpper(args[0]) {
		case "SCRIPT", "EXEC":
			clear(n.loadedScripts)
		}
	}
	if n.master != nil {
		return n.execReplica(peer, args)
	}
	n.expireSweep()
	write := n.isWrite(args)
	refusal := ""
	if write {
		refusal = n.writeRefusal()
		if refusal != "" && !deferredWrite(args) {
			n.judged = false
			n.Refused++
			return errorReply(refusal)
		}
	}
	reply := n.run(peer, args)
	n.judged = false
	if write {
		if refusal != "" && n.changed(args) {
			// Redis checks a script's first write, not the EVAL: a script
			// that only reads runs; one that writes fails there.
			n.restore(args)
			n.Refused++
			return errorReply(refusal)
		}
		n.propagate(args)
		if len(n.links) > 0 {
			n.activeExpiry()
		}
	}
	return reply
}

// run executes a command: a known lock script natively, anything else in
// miniredis.
func (n *RedisNode) run(peer *server.Peer, args []string) []byte {
	n.last = lastRun{}
	if n.ScriptFastPath != nil && isScript(args) {
		if reply, ok := n.ScriptFastPath(n, peer, args); ok {
			n.last.reply = reply
			return reply
		}
		n.last.native = nil // miniredis's Lua ran it: its writes are unknown
		// Lua may read or set any TTL, in any database: from now on the
		// node brings its TTLs to the present before every command.
		n.clockEager = true
	}
	reply := n.dispatchCompat(peer, args)
	n.last.reply = reply
	return reply
}

// Apply runs a command on the node as a client's write does, through the
// effect stream (AOF, replicas): the harness writes pre-existing state this
// way, never straight into miniredis.
func (n *RedisNode) Apply(args ...string) []byte {
	if n.applyPeer == nil {
		n.applyPeer = n.NewPeer()
	}
	return n.Exec(n.applyPeer, args)
}

func isScript(args []string) bool {
	switch strings.ToUpper(args[0]) {
	case "EVAL", "EVALSHA", "FCALL":
		return true
	}
	return false
}

// deferredWrite reports whether a command may or may not write depending on
// what it runs (a script, a transaction): Redis refuses it at its first
// write, so the node runs it and undoes it if it changed anything.
func deferredWrite(args []string) bool {
	return isScript(args) || strings.EqualFold(args[0], "EXEC")
}

func errorReply(msg string) []byte { return []byte("-" + msg + "\r\n") }

// notData are commands miniredis does not mark read-only that still never
// change the dataset; they are neither logged nor replicated, and a replica
// accepts them.
var notData = map[string]bool{"HELLO": true, "CLIENT": true, "AUTH": true, "PING": true, "ECHO": true, "SELECT": true, "QUIT": true, "SCRIPT": true, "INFO": true, "COMMAND": true,
	"MULTI": true, "DISCARD": true, "WATCH": true, "UNWATCH": true, "WAIT": true, "REPLCONF": true}

func (n *RedisNode) isWrite(args []string) bool {
	return !n.mr.IsReadOnlyCommand(args[0]) && !notData[strings.ToUpper(args[0])]
}

// changed reports whether the keys a write may touch differ from what the
// stream last described.
func (n *RedisNode) changed(args []string) bool {
	keys, all := n.writeKeys(args)
	if all {
		keys = n.allKeys()
	}
	for _, k := range keys {
		old, had := n.shadow[k]
		cur, has := n.readKey(k)
		if had != has || had && !old.equal(cur) {
			return true
		}
	}
	return false
}

// restore puts back the keys a refused script changed, from the shadow.
func (n *RedisNode) restore(args []string) {
	keys, all := n.writeKeys(args)
	if all {
		keys = n.allKeys()
	}
	for _, k := range keys {
		s, ok := n.shadow[k]
		n.restoreKey(k, s, ok)
	}
}

// restoreKey rewrites one key in miniredis to state s (absent if !ok),
// without touching the stream. On a replica keys carry no TTL.
func (n *RedisNode) restoreKey(k string, s keyState, ok bool) {
	n.dispatchEffect([]string{"DEL", k})
	if !ok {
		return
	}
	switch s.kind {
	case "string":
		n.dispatchEffect([]string{"SET", k, s.value})
	case "hash":
		c := []string{"HSET", k}
		for _, f := range sortedFields(s.fields) {
			c = append(c, f, s.fields[f])
		}
		n.dispatchEffect(c)
	}
	if s.expireAt > 0 && n.master == nil {
		n.dispatchEffect([]string{"PEXPIREAT", k, msString(s.expireAt)})
	}
}

// execReplica serves a client on a replica: writes are refused with
// Redis's READONLY error (replica-read-only yes, the default), and reads
// see a key whose expiry the replica's own clock has passed as missing,
// though the replica keeps it until its master's DEL arrives.
func (n *RedisNode) execReplica(peer *server.Peer, args []string) []byte {
	const readOnly = "READONLY You can't write against a read only replica."
	if strings.EqualFold(args[0], "WAIT") {
		return errorReply("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not advised) writes to the replica are just local and are not propagated.")
	}
	write := n.isWrite(args)
	if write && !deferredWrite(args) {
		return errorReply(readOnly)
	}
	hidden := n.expiredOnReplica()
	for _, k := range hidden {
		n.dispatchEffect([]string{"DEL", k})
	}
	reply := n.withReplicaTTLs(func() []byte { return n.run(peer, args) })
	if write && n.changed(args) {
		n.restore(args)
		reply = errorReply(readOnly)
	}
	for _, k := range hidden {
		s := n.shadow[k]
		n.restoreKey(k, s, true)
	}
	return reply
}

func (n *RedisNode) noteLoaded(sha string) {
	if n.loadedScripts == nil {
		n.loadedScripts = map[string]bool{}
	}
	n.loadedScripts[sha] = true
}

// Dispatch runs a command through miniredis without the clock sync and
// bookkeeping of Exec; the script fast path uses it for its inner calls.
func (n *RedisNode) Dispatch(peer *server.Peer, args []string) []byte {
	n.clockBeforeDispatch(args)
	n.out.Reset()
	n.mr.Server().Dispatch(peer, args)
	peer.Flush()
	return bytes.Clone(n.out.Bytes())
}

// NewPeer returns a server-side connection whose replies Exec returns.
// Dispatch flushes the peer after every command, so its buffer only
// gathers one reply: 512 bytes instead of bufio's 4 KiB, allocated and
// zeroed for every connection a client dials (issue 24); a longer reply
// goes through to n.out unchanged.
func (n *RedisNode) NewPeer() *server.Peer {
	return server.NewPeer(bufio.NewWriterSize(&n.out, 512))
}

// commandSummary renders a command for the trace, shortening Lua bodies.
func commandSummary(args []string) string {
	var sb strings.Builder
	for i, a := range args {
		if i > 0 {
			sb.WriteByte(' ')
		}
		if i == 1 && strings.EqualFold(args[0], "EVAL") {
			sb.WriteString(ScriptName(a))
			continue
		}
		if len(a) > 40 {
			a = a[:37] + "..."
		}
		sb.WriteString(a)
	}
	return sb.String()
}

// replySummary renders a RESP reply on one line for the trace.
func replySummary(r []byte) string {
	s := strings.ReplaceAll(strings.TrimRight(string(r), "\r\n"), "\r\n", " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// scriptNames maps known Lua scripts to short names for traces; algorithms
// register theirs with NameScript.
var scriptNames = map[string]string{}

// NameScript gives a Lua script a short name used in traces and reports.
// Call it from package init only.
func NameScript(src, name string) { scriptNames[src] = name }

// ScriptName is the registered name of a script, or "<lua script>".
func ScriptName(src string) string {
	if n, ok := scriptNames[src]; ok {
		return "<" + n + ">"
	}
	return "<lua script>"
}
