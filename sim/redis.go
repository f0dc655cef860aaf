package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
}

// NewRedisNode starts a Redis node on a new host called name.
func (w *World) NewRedisNode(name string, clock *Clock) *RedisNode {
	h := w.NewHost(name, clock)
	n := &RedisNode{Name: name, Host: h, Clock: h.Clock, w: w, up: true}
	n.mr = newMiniredis(w, n.Clock.Time(w.now))
	n.lastLocal = n.Clock.Local(w.now)
	mr := n.mr
	w.OnClose(func() { mr.Close() })
	return n
}

func newMiniredis(w *World, now time.Time) *miniredis.Miniredis {
	mr := miniredis.NewMiniRedis()
	mr.Seed(int(w.rng.Int64N(1 << 31)))
	mr.SetTime(now)
	mr.ClockTTL(true)
	// Dial is the only exported way to give miniredis a server without a
	// listener; we never use the pipe it returns, commands go through Dispatch.
	if c, err := mr.Dial(); err == nil {
		c.Close()
	}
	return mr
}

// Miniredis exposes the node's dataset, for checks and for replication.
func (n *RedisNode) Miniredis() *miniredis.Miniredis { return n.mr }

// Up reports whether the node is running.
func (n *RedisNode) Up() bool { return n.up }

// syncClock sets miniredis's time to the node's local time before a command.
// A forward jump makes keys expire early, as in the Redlock clock-jump story.
// Real Redis stores absolute expiry times, so a backward jump makes every TTL
// longer by the jump; miniredis keeps relative TTLs, so we add it back.
func (n *RedisNode) syncClock() {
	local := n.Clock.Local(n.w.now)
	if back := n.lastLocal - local; back > 0 {
		for _, k := range n.mr.Keys() {
			if ttl := n.mr.TTL(k); ttl > 0 {
				n.mr.SetTTL(k, ttl+back)
			}
		}
	}
	n.lastLocal = local
	n.mr.SetTime(Epoch.Add(local))
}

// Exec runs one command on the node now, as if from the given connection
// peer, and returns the RESP reply.
func (n *RedisNode) Exec(peer *server.Peer, args []string) []byte {
	n.syncClock()
	n.Commands++
	if len(args) > 0 && n.loadedScripts != nil {
		switch strings.ToUpper(args[0]) {
		case "SCRIPT", "EXEC":
			clear(n.loadedScripts)
		}
	}
	if n.ScriptFastPath != nil && len(args) > 0 {
		switch strings.ToUpper(args[0]) {
		case "EVAL", "EVALSHA":
			if reply, ok := n.ScriptFastPath(n, peer, args); ok {
				n.noteWrite(args, reply)
				return reply
			}
		}
	}
	reply := n.Dispatch(peer, args)
	n.noteWrite(args, reply)
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
	n.out.Reset()
	n.mr.Server().Dispatch(peer, args)
	peer.Flush()
	return bytes.Clone(n.out.Bytes())
}

// NewPeer returns a server-side connection whose replies Exec returns.
func (n *RedisNode) NewPeer() *server.Peer {
	return server.NewPeer(bufio.NewWriter(&n.out))
}

// aofEntry is one write in the node's append-only file: the command and the
// node's local time when it ran, so a replay reproduces TTLs exactly.
type aofEntry struct {
	at    time.Duration
	local time.Duration
	args  []string
}

// notData are commands miniredis does not mark read-only that still never
// change the dataset; they are neither logged nor replicated.
var notData = map[string]bool{"HELLO": true, "CLIENT": true, "AUTH": true, "PING": true, "ECHO": true, "SELECT": true, "QUIT": true, "SCRIPT": true, "INFO": true, "COMMAND": true}

func (n *RedisNode) noteWrite(args []string, reply []byte) {
	if len(reply) == 0 || reply[0] == '-' || n.mr.IsReadOnlyCommand(args[0]) || notData[strings.ToUpper(args[0])] {
		return
	}
	n.aof = append(n.aof, aofEntry{at: n.w.now, local: n.Clock.Local(n.w.now), args: args})
	for _, f := range n.onWrite {
		f(args)
	}
}

// AfterWrite registers fn to see every command that changed the dataset,
// after it ran; replication is built on it.
func (n *RedisNode) AfterWrite(fn func(args []string)) { n.onWrite = append(n.onWrite, fn) }

// Replicate makes replica follow n asynchronously, as Redis replication
// does: each write is shipped lag after it ran, as an ordinary message, so
// it can be delayed, dropped or cut off. A write not yet shipped when the
// master dies is lost — the acknowledged-but-unreplicated window behind the
// failover scenarios.
func (n *RedisNode) Replicate(replica *RedisNode, lag time.Duration) {
	replica.master = n
	w := n.w
	peer := replica.NewPeer()
	n.AfterWrite(func(args []string) {
		summary := commandSummary(args)
		w.After(lag, func() {
			if !n.up {
				w.Tracef(n.Name, "replication of %s to %s lost: %s is down", summary, replica.Name, n.Name)
				return
			}
			if n.promoted != nil {
				return // after a failover the old master replicates nothing
			}
			m := &Message{From: n.Name, To: replica.Name, Client: n.Name, Dir: Request, Op: "REPLICATE", Summary: summary}
			w.Net.Send(m, func() {
				if replica.master == nil {
					return // promoted meanwhile: it no longer follows anyone
				}
				reply := replica.Exec(peer, args)
				w.Tracef(replica.Name, "replicated %s → %s", summary, replySummary(reply))
			})
		})
	})
}

// Master is the node a replica follows, or nil.
func (n *RedisNode) Master() *RedisNode { return n.master }

// Promote makes a replica the master (a Sentinel failover): it stops
// following its master, and clients that dial the old master reach it.
func (n *RedisNode) Promote() error {
	old := n.master
	if old == nil {
		return fmt.Errorf("%s is not a replica", n.Name)
	}
	n.master = nil
	old.promoted = n
	n.w.Tracef(n.Name, "failover: %s promoted to master in place of %s", n.Name, old.Name)
	return nil
}

// current follows failovers to the node that now serves n's clients.
func (n *RedisNode) current() *RedisNode {
	for n.promoted != nil {
		n = n.promoted
	}
	return n
}

// Crash stops the node: messages to it are lost until Restart.
func (n *RedisNode) Crash() {
	if !n.up {
		return
	}
	n.up = false
	n.crashedAt = n.w.now
	n.w.Net.SetDown(n.Name, true)
	n.w.Tracef(n.Name, "node crash")
}

// Restart brings a crashed node back with what its persistence mode saved,
// by replaying its append-only file on a fresh dataset:
//   - "none" (or ""): nothing; the node restarts empty, as in the
//     Redlock crash-restart story;
//   - "everysec": the writes fsynced by the last whole second before the
//     crash; writes of the last second are lost;
//   - "always": every acknowledged write.
//
// Replaying at each entry's original local time keeps TTLs as Redis keeps
// them: as absolute expiry times, so the downtime counts against them.
func (n *RedisNode) Restart(persistence string) {
	if n.up {
		return
	}
	var keep []aofEntry
	switch persistence {
	case "always":
		keep = n.aof
	case "everysec":
		cutoff := n.crashedAt.Truncate(time.Second)
		for _, e := range n.aof {
			if e.at <= cutoff {
				keep = append(keep, e)
			}
		}
	}
	old := n.mr
	clear(n.loadedScripts)
	n.mr = newMiniredis(n.w, Epoch.Add(n.Clock.Local(n.w.now)))
	peer := n.NewPeer()
	for _, e := range keep {
		n.mr.SetTime(Epoch.Add(e.local))
		n.Dispatch(peer, e.args)
	}
	n.aof = append([]aofEntry(nil), keep...)
	n.lastLocal = n.Clock.Local(n.w.now)
	n.mr.SetTime(Epoch.Add(n.lastLocal))
	old.Close()
	mr := n.mr
	n.w.OnClose(func() { mr.Close() })
	for _, c := range n.conns {
		c.peer = nil // connections do not survive a restart
	}
	n.up = true
	n.w.Net.SetDown(n.Name, false)
	n.w.Tracef(n.Name, "node restart with persistence %q (%d writes replayed, %d keys)", persistence, len(keep), len(n.mr.Keys()))
}

// ClientOptions tunes the go-redis client a process uses to reach a node.
type ClientOptions struct {
	// Timeout is how long a read waits for a reply, on the client's own
	// oscillator, before go-redis sees an i/o timeout. Default 50ms.
	Timeout time.Duration
	// LibraryRetries keeps go-redis's default retry policy (3 retries with
	// backoff): a command whose reply is lost is sent again. Off by default.
	LibraryRetries bool
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
		// The dialer never fails: a failed dial makes go-redis retry on real
		// timers. Refusal is modelled by the conn itself.
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			target := n.current()
			c := &redisConn{node: target, host: host, timeout: o.Timeout, id: n.w.Net.NewConn()}
			target.conns = append(target.conns, c)
			n.w.Tracef(host.Name, "dial %s", target.Name)
			return c, nil
		},
	}
	if o.LibraryRetries {
		opt.MaxRetries = 0 // go-redis default: 3 retries
	}
	return redis.NewClient(opt)
}

// redisConn is the net.Conn go-redis dials: each RESP command written to it
// becomes a simulated message to the node, and Read blocks the calling
// process until the reply message arrives or the client's timeout elapses.
type redisConn struct {
	id      uint64 // the connection's identity on the network (per-connection FIFO)
	node    *RedisNode
	host    *Host
	timeout time.Duration
	peer    *server.Peer
	wbuf    []byte
	rbuf    []byte
	closed  bool
	waiter  *Process
	waitID  uint64
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout (simulated)" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var errConnClosed = errors.New("use of closed simulated connection")

func (c *redisConn) Write(b []byte) (int, error) {
	if c.closed {
		return 0, errConnClosed
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
		c.send(w, args)
	}
	return len(b), nil
}

func (c *redisConn) send(w *World, args []string) {
	var summary string
	if w.Tracing() {
		summary = commandSummary(args)
	}
	op := strings.ToUpper(args[0])
	w.Tracef(c.host.Name, "send %s → %s", summary, c.node.Name)
	req := &Message{Conn: c.id, From: c.host.Name, To: c.node.Name, Client: c.host.Name, Dir: Request, Op: op, Summary: summary}
	w.Net.Send(req, func() {
		if c.peer == nil {
			c.peer = c.node.NewPeer()
		}
		reply := c.node.Exec(c.peer, args)
		var rs string
		if w.Tracing() {
			rs = replySummary(reply)
		}
		w.Tracef(c.node.Name, "%s → %s", summary, rs)
		rep := &Message{Conn: c.id, From: c.node.Name, To: c.host.Name, Client: c.host.Name, Dir: Reply, Op: op, Summary: summary + " → " + rs}
		w.Net.Send(rep, func() {
			if c.closed {
				w.Tracef(c.host.Name, "reply on closed connection discarded: %s", rs)
				return
			}
			c.rbuf = append(c.rbuf, reply...)
			if c.waiter != nil {
				w.wakeup(c.waiter, c.waitID)
			}
		})
	})
}

func (c *redisConn) Read(b []byte) (int, error) {
	w := c.node.w
	if len(c.rbuf) == 0 && !c.closed {
		p := w.current
		if p == nil {
			return 0, errors.New("simulated connection read outside a process")
		}
		c.waiter, c.waitID = p, p.prepark()
		timer := w.After(p.Host.Clock.TrueDuration(w.now, c.timeout), func() { w.wakeup(p, c.waitID) })
		p.park()
		timer.Cancel()
		c.waiter = nil
		if p.killed {
			return 0, errConnClosed
		}
	}
	if len(c.rbuf) > 0 {
		n := copy(b, c.rbuf)
		c.rbuf = c.rbuf[n:]
		return n, nil
	}
	if c.closed {
		return 0, io.EOF
	}
	w.Tracef(c.host.Name, "timeout waiting for %s", c.node.Name)
	return 0, timeoutError{}
}

func (c *redisConn) Close() error {
	if !c.closed {
		c.closed = true
		c.node.w.Tracef(c.host.Name, "close connection to %s", c.node.Name)
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
