package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/sim/event"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
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

// ClientOptions tunes the go-redis client a process uses to reach a node.
type ClientOptions struct {
	// Timeout is how long a read waits for a reply, on the client's own
	// oscillator, before go-redis sees an i/o timeout. Default 50ms.
	Timeout time.Duration
	// LibraryRetries keeps go-redis's default retry policy (3 retries with
	// backoff): a command whose reply is lost is sent again. Off by default.
	LibraryRetries bool
	// Direct hands each command from go-redis to the simulated node
	// without RESP framing on the client side (redis_direct.go): same
	// messages, same faults, same replies, a fraction of the cost. It is
	// taken only where it is proven to change nothing (no library
	// retries, no bubble); elsewhere the client keeps the wire path.
	Direct bool
}

// NewClient returns an unmodified go-redis client whose connections run over
// the simulated network from host to the node. One client per process that
// talks to the node at a time: a shared, exhausted pool would wait on a real
// timer.
func (n *RedisNode) NewClient(host *Host, o ClientOptions) *redis.Client {
	if o.Timeout == 0 {
		o.Timeout = 50 * time.Millisecond
	}
	opt := &redis.Options{
		Addr:            n.Name + ":6379",
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		ReadTimeout:     -2,
		WriteTimeout:    -2,
		PoolSize:        1,
		ConnMaxIdleTime: -1,
		MinIdleConns:    0,
		// Lock commands and replies are tiny; go-redis's default 32 KiB
		// buffers, allocated and zeroed for every (re)dial, dominated the
		// cost of runs where timeouts close connections often.
		ReadBufferSize:  1024,
		WriteBufferSize: 1024,
		// Left on "auto", go-redis resolves Addr in DNS inside NewClient to
		// classify the endpoint: a real network access, and a stall of seconds
		// where DNS is unreachable.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	dial := func() *redisConn {
		target := n.masterFor(host.Name)
		c := &redisConn{node: target, host: host, timeout: o.Timeout, readTimeout: o.Timeout, id: n.w.Net.NewConn()}
		target.conns = append(target.conns, c)
		if n.w.b != nil {
			c.bubbleDial()
		}
		n.w.Record(host.Name, event.Event{Kind: event.ConnectionDialed, Node: target.Name, Client: host.Name})
		return c
	}
	var direct *directPath
	if o.Direct && !o.LibraryRetries && n.w.b == nil {
		direct = &directPath{w: n.w, dial: dial}
	}
	// The dialer never fails: a failed dial makes go-redis retry on real
	// timers. Refusal is modelled by the conn itself.
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if direct != nil {
			// Commands the direct path leaves to go-redis travel on
			// the same connection as the others (redis_direct.go).
			return direct.dialFor(), nil
		}
		if n.w.b != nil {
			n.w.enter("dial " + host.Name)
			defer n.w.leave()
			n.w.gateAct(host)
		}
		return dial(), nil
	}
	if o.LibraryRetries {
		opt.MaxRetries = 0 // go-redis default: 3 retries
		if n.w.b == nil {
			// Under the baton, go-redis sleeps between retries on the
			// real clock (8 ms to 512 ms) while holding the baton:
			// simulated time does not move, so the sleep changes nothing
			// in the run and only costs wall time — a client whose every
			// request is lost spent hours of it on an hour of simulated
			// time (issue 25). The retries go out back to back in
			// simulated time either way. In a bubble the sleep is
			// virtual time, as a real client's is real time, and stays.
			opt.MinRetryBackoff, opt.MaxRetryBackoff = -1, -1
		}
	}
	client := redis.NewClient(opt)
	if direct != nil {
		client.AddHook(direct)
	}
	return client
}

// redisConn is the net.Conn go-redis dials: each RESP command written to it
// becomes a simulated message to the node, and Read blocks the calling
// process until the reply message arrives or the client's timeout elapses.
type redisConn struct {
	id      uint64 // the connection's identity on the network (per-connection FIFO)
	node    *RedisNode
	host    *Host
	timeout time.Duration
	// readTimeout is how long the next read waits: timeout, or the
	// command's own (commandReadTimeout); negative waits for ever.
	readTimeout time.Duration
	peer        *server.Peer
	wbuf        []byte
	rbuf        []byte
	closed      bool
	// movedTo is set when Sentinel told the client that the master moved
	// (+switch-master) while the connection sat idle in go-redis's pool:
	// the failover client closes such connections at the switch
	// (sentinel.go onFailover, ConnPool.Filter), so the next command goes
	// out on a fresh connection to the new master, without an error.
	movedTo *RedisNode
	waiter  *Process
	waitID  uint64
	bb      *connBubble // in a bubble (bubble.go)
	// free is a call whose reply has landed, ready for the next command
	// (redis_call.go).
	free *redisCall
}

// commandReadTimeout is the read deadline go-redis gives a command's reply.
// A command that blocks on the server by design (WAIT) carries its own
// timeout, and go-redis waits that long plus 10 s instead of the client's
// ReadTimeout (baseClient.cmdTimeout); a zero timeout blocks for ever, as
// WAIT n 0 does on the server, so the read has no deadline (-1 here).
func commandReadTimeout(args []string, ordinary time.Duration) time.Duration {
	if len(args) == 3 && strings.EqualFold(args[0], "WAIT") {
		ms, err := strconv.ParseInt(args[2], 10, 64)
		switch {
		case err != nil || ms < 0:
			return ordinary // the server answers at once with an error
		case ms == 0:
			return -1
		default:
			return time.Duration(ms)*time.Millisecond + 10*time.Second
		}
	}
	return ordinary
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout (simulated)" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var (
	errConnClosed = errors.New("use of closed simulated connection")
)

func (c *redisConn) Write(b []byte) (int, error) {
	if c.bb != nil {
		return c.bubbleWrite(b)
	}
	if c.closed {
		return 0, errConnClosed
	}
	if c.movedTo != nil {
		c.redial()
	}
	w := c.node.w
	c.wbuf = append(c.wbuf, b...)
	for {
		args, used, err := parseCommand(c.wbuf)
		if err != nil {
			return 0, err
		}
		if used == 0 {
			break
		}
		c.wbuf = c.wbuf[used:]
		c.readTimeout = commandReadTimeout(args, c.timeout)
		c.send(w, args)
	}
	return len(b), nil
}

func (c *redisConn) send(w *World, args []string) {
	var summary string
	if w.Tracing() || c.bb != nil {
		summary = commandSummary(args)
	}
	op := upperName(args[0])
	if w.Tracing() {
		w.Record(c.host.Name, event.Event{Kind: event.CommandSent, Node: c.node.Name, Client: c.host.Name, Op: op, Command: summary, Args: args})
	}
	req := w.Net.newMessage()
	*req = Message{Conn: c.id, From: c.host.Name, To: c.node.Name, Client: c.host.Name, Dir: Request, Op: op, Summary: summary}
	if c.bb != nil {
		req.order = c.bb.id
	}
	call := c.newCall()
	call.args, call.op, call.summary, call.order = args, op, summary, req.order
	w.Net.Send(req, call.onRequest)
}

// switchMaster is go-redis's failover client learning that the master
// moved to m: an idle connection is dropped from the pool (the next command
// dials m); one in use is closed under its command, which fails.
func (c *redisConn) switchMaster(m *RedisNode) {
	if c.closed || c.node == m {
		return
	}
	w := c.node.w
	if c.waiter == nil {
		c.movedTo = m
		return
	}
	c.closed = true
	w.Record(c.host.Name, event.Event{Kind: event.ConnectionMoved, Node: c.node.Name, To: m.Name, Client: c.host.Name})
	w.wakeup(c.waiter, c.waitID)
}

// redial stands for the fresh connection go-redis dials after dropping an
// idle one at the switch: a new identity and server-side state on the new
// master.
func (c *redisConn) redial() {
	old, m := c.node, c.movedTo
	c.movedTo = nil
	old.conns = slices.DeleteFunc(old.conns, func(x *redisConn) bool { return x == c })
	c.node, c.peer, c.id = m, nil, m.w.Net.NewConn()
	m.conns = append(m.conns, c)
	m.w.Record(c.host.Name, event.Event{Kind: event.ConnectionDialed, Node: m.Name, From: old.Name, Client: c.host.Name})
}

func (c *redisConn) Read(b []byte) (int, error) {
	if c.bb != nil {
		return c.bubbleRead(b)
	}
	if err := c.await(); err != nil {
		return 0, err
	}
	n := copy(b, c.rbuf)
	c.rbuf = c.rbuf[n:]
	return n, nil
}

// await blocks the calling process until reply bytes are there, the
// connection is closed under it, or the read times out on the client's
// own oscillator; it returns nil when c.rbuf holds bytes.
func (c *redisConn) await() error {
	w := c.node.w
	if len(c.rbuf) == 0 && !c.closed {
		p := w.current
		if p == nil {
			return errors.New("simulated connection read outside a process")
		}
		c.waiter, c.waitID = p, p.prepark()
		var timer *Event
		if c.readTimeout >= 0 {
			timer = w.wakeAt(w.Later(p.Host.Clock.TrueDuration(w.now, c.readTimeout)), p, c.waitID)
		}
		p.park()
		timer.Cancel()
		c.waiter = nil
		if p.killed {
			return errConnClosed
		}
	}
	if len(c.rbuf) > 0 {
		return nil
	}
	if c.closed {
		return io.EOF
	}
	w.Record(c.host.Name, event.Event{Kind: event.ReplyTimeout, Node: c.node.Name, Client: c.host.Name})
	return timeoutError{}
}

func (c *redisConn) Close() error {
	if c.bb != nil {
		return c.bubbleClose()
	}
	if !c.closed {
		c.closed = true
		c.node.w.Record(c.host.Name, event.Event{Kind: event.ConnectionClosed, Node: c.node.Name, Client: c.host.Name})
		// The node forgets it: go-redis closes a connection after every
		// timeout and dials a new one, so a client whose requests are all
		// lost would otherwise leave one behind per attempt (issue 25: a
		// day of dropped requests kept 65 MB of dead connections). A
		// closed connection is skipped by every walk over the list (a
		// restart, a failover), and replies still on their way hold it
		// themselves.
		c.node.conns = slices.DeleteFunc(c.node.conns, func(x *redisConn) bool { return x == c })
	}
	return nil
}

func (c *redisConn) LocalAddr() net.Addr                { return simAddr(c.host.Name) }
func (c *redisConn) RemoteAddr() net.Addr               { return simAddr(c.node.Name) }
func (c *redisConn) SetDeadline(t time.Time) error      { return nil }
func (c *redisConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *redisConn) SetWriteDeadline(t time.Time) error { return nil }

type simAddr string

func (a simAddr) Network() string { return "sim" }
func (a simAddr) String() string  { return string(a) }

// parseCommand reads one RESP array of bulk strings (what go-redis writes)
// from b. used is 0 when b does not yet hold a whole command.
func parseCommand(b []byte) (args []string, used int, err error) {
	if len(b) == 0 {
		return nil, 0, nil
	}
	if b[0] != '*' {
		return nil, 0, fmt.Errorf("simulated redis: expected RESP array, got %q", b[0])
	}
	line, rest, ok := cutLine(b[1:])
	if !ok {
		return nil, 0, nil
	}
	count, err := strconv.Atoi(string(line))
	if err != nil || count < 0 {
		return nil, 0, fmt.Errorf("simulated redis: bad array length %q", line)
	}
	pos := len(b) - len(rest)
	args = make([]string, 0, count)
	for i := 0; i < count; i++ {
		if pos >= len(b) {
			return nil, 0, nil
		}
		if b[pos] != '$' {
			return nil, 0, fmt.Errorf("simulated redis: expected bulk string, got %q", b[pos])
		}
		line, rest, ok := cutLine(b[pos+1:])
		if !ok {
			return nil, 0, nil
		}
		size, err := strconv.Atoi(string(line))
		if err != nil || size < 0 {
			return nil, 0, fmt.Errorf("simulated redis: bad bulk length %q", line)
		}
		if len(rest) < size+2 {
			return nil, 0, nil
		}
		args = append(args, string(rest[:size]))
		pos = len(b) - len(rest) + size + 2
	}
	return args, pos, nil
}

func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return nil, nil, false
	}
	return b[:i], b[i+2:], true
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
