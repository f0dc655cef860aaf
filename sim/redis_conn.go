package sim

import (
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

	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The client side of a simulated Redis node (redis.go): go-redis over a
// simulated connection that carries each command as a network message.

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
		n.w.rt.dialed(c)
		n.w.Record(host.Name, event.Event{Kind: event.ConnectionDialed, Node: target.Name, Client: host.Name})
		return c
	}
	if o.LibraryRetries {
		opt.MaxRetries = 0 // go-redis default: 3 retries
	}
	// The runtime has its say: the direct path and the retries' backoff
	// (kernel.go, bubble.go).
	allowed := n.w.rt.redisClient(o, opt)
	var direct *directPath
	// The dialer never fails: a failed dial makes go-redis retry on real
	// timers. Refusal is modelled by the conn itself.
	if allowed.Direct && !allowed.LibraryRetries {
		direct = &directPath{w: n.w, dial: dial}
		// Commands the direct path leaves to go-redis travel on the
		// same connection as the others (redis_direct.go).
		opt.Dialer = func(context.Context, string, string) (net.Conn, error) { return direct.dialFor(), nil }
	} else {
		opt.Dialer = n.w.rt.redisDialer(host, dial)
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

func (timeoutError) Error() string { return "i/o timeout (simulated)" }

func (timeoutError) Timeout() bool { return true }

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

func (c *redisConn) LocalAddr() net.Addr { return simAddr(c.host.Name) }

func (c *redisConn) RemoteAddr() net.Addr { return simAddr(c.node.Name) }

func (c *redisConn) SetDeadline(t time.Time) error { return nil }

func (c *redisConn) SetReadDeadline(t time.Time) error { return nil }

func (c *redisConn) SetWriteDeadline(t time.Time) error { return nil }

type simAddr string

func (a simAddr) Network() string { return "sim" }

func (a simAddr) String() string { return string(a) }

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
