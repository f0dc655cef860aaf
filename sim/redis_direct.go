package sim

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The direct path: a go-redis hook that hands a command to the simulated
// node and fills the command's typed reply, without go-redis writing RESP
// on the client side and parsing it back (issue 24). Exploration runs
// thousands of commands per run, and go-redis's pool, writer, reader and
// retry classification cost more than the node that serves them.
//
// It changes nothing a run can observe, because it keeps everything the
// wire path does on the simulated side and drops only go-redis's own
// bytes:
//
//   - the command is still a message on the connection go-redis would
//     use (redisConn.send): partitions, drops, delays, lost replies and
//     down nodes act on it as before, and it is traced the same way;
//   - the reply is awaited exactly as redisConn.Read awaits it: the
//     client's read timeout on its own oscillator, a pause of the
//     client, a connection closed under it by a failover, a crash;
//   - the connection has go-redis's lifecycle: dialed when a command needs
//     one, closed after a timeout or a connection error (go-redis's
//     isBadConn), dialed again by the next command;
//   - the typed value is what go-redis's reader would give: decoded here
//     only for the replies and command types whose decoding is plain
//     (status, integer, bulk string, nil into Cmd, StatusCmd, StringCmd,
//     IntCmd, BoolCmd); every other reply (errors, arrays) and command type
//     is decoded by go-redis itself, through a client that reads the
//     reply's bytes (replayClient), so error types (NOSCRIPT, READONLY,
//     NOREPLICAS) come out as go-redis makes them.
//
// Anything else goes to go-redis as before (next): commands whose
// arguments are not plain values, pipelines and transactions, a cancelled
// context. Such a command travels on the same simulated connection
// (sharedConn), so a client that mixes both paths opens and closes
// connections exactly as one that uses only the wire.
//
// The path is taken only without library retries (go-redis's retry loop
// and backoff stay with go-redis) and outside bubbles (NewClient).
// Equivalence is tested on every catalogue scenario and on a sample of
// explored runs (scenarios: TestDirectPathSameDigests).
type directPath struct {
	w    *World
	dial func() *redisConn
	cur  *redisConn // the connection go-redis's pool would hold, or nil
	// inPipeline is set while go-redis runs a pipeline, and pipelineDials
	// counts its dials (ProcessPipelineHook).
	inPipeline    bool
	pipelineDials int
}

// conn returns the open connection, dialing one as go-redis's pool does
// when it has none: a connection that was closed (after a timeout, a
// failover) is one go-redis would have removed. A new connection opens
// with go-redis's handshake (initConn): HELLO with the protocol version,
// whose reply matters only when it does not come (the command then fails
// with the handshake's error and is never sent).
func (d *directPath) conn() (*redisConn, error) {
	if d.cur != nil && !d.cur.closed {
		return d.cur, nil
	}
	d.cur = d.dial()
	if _, err := d.roundTrip(d.cur, helloArgs); err != nil {
		return nil, err
	}
	return d.cur, nil
}

// helloArgs is go-redis's handshake with Protocol 2, no password, no
// client name (Options in NewClient).
var helloArgs = []string{"hello", "2"}

// roundTrip sends one command on c and awaits its reply, as go-redis's
// write and read on the connection do; on a transport error it closes c,
// as go-redis's pool does with a bad connection (isBadConn).
func (d *directPath) roundTrip(c *redisConn, args []string) ([]byte, error) {
	if c.movedTo != nil {
		c.redial()
	}
	c.readTimeout = commandReadTimeout(args, c.timeout)
	c.send(c.node.w, args)
	if err := c.await(); err != nil {
		c.Close()
		return nil, err
	}
	reply := c.rbuf
	c.rbuf = c.rbuf[:0]
	return reply, nil
}

func (d *directPath) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook leaves pipelines and transactions to go-redis, on
// the wire. go-redis runs them on a connection of a pool of their own
// (withPipelineConn): the first dial during one is that pool's, and gets a
// plain simulated connection; a second one is the main pool's (a spill),
// which is the direct path's connection.
func (d *directPath) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		d.inPipeline, d.pipelineDials = true, 0
		defer func() { d.inPipeline = false }()
		return next(ctx, cmds)
	}
}

// dialFor is the connection go-redis gets when one of its pools dials.
func (d *directPath) dialFor() net.Conn {
	if d.inPipeline && d.pipelineDials == 0 {
		d.pipelineDials++
		return d.dial()
	}
	return &sharedConn{d: d}
}

func (d *directPath) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Err() != nil {
			return next(ctx, cmd) // go-redis refuses it before any I/O
		}
		args, ok := plainArgs(cmd.Args())
		// HELLO is go-redis's own handshake on a connection its pool
		// dialed (its hooks see it too): that connection answers it
		// (sharedConn).
		if !ok || strings.EqualFold(args[0], "hello") {
			return next(ctx, cmd)
		}
		return d.process(cmd, args)
	}
}

// process is one attempt of go-redis's processWithRetry with retries off.
func (d *directPath) process(cmd redis.Cmder, args []string) error {
	d.w.DirectCommands++
	c, err := d.conn()
	if err != nil {
		return err
	}
	reply, err := d.roundTrip(c, args)
	if err != nil {
		return err
	}
	if err, ok := decodeReply(cmd, reply); ok {
		return err
	}
	err, bad := d.w.replay().decode(cmd, reply)
	if bad {
		c.Close() // go-redis retires a connection after READONLY, say
	}
	return err
}

// plainArgs renders go-redis's arguments as its writer would
// (proto.Writer.WriteArg), for the types lock code passes; ok is false for
// any other type, which go-redis then writes itself.
func plainArgs(in []any) ([]string, bool) {
	if len(in) == 0 {
		return nil, false
	}
	out := make([]string, len(in))
	for i, a := range in {
		switch v := a.(type) {
		case string:
			out[i] = v
		case []byte:
			out[i] = string(v)
		case int:
			out[i] = strconv.FormatInt(int64(v), 10)
		case int64:
			out[i] = strconv.FormatInt(v, 10)
		case int32:
			out[i] = strconv.FormatInt(int64(v), 10)
		case uint64:
			out[i] = strconv.FormatUint(v, 10)
		case uint:
			out[i] = strconv.FormatUint(uint64(v), 10)
		case float64:
			out[i] = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			out[i] = "0"
			if v {
				out[i] = "1"
			}
		case time.Duration:
			out[i] = strconv.FormatInt(v.Nanoseconds(), 10)
		case nil:
			out[i] = ""
		default:
			return nil, false
		}
	}
	return out, true
}

// decodeReply fills cmd from a RESP2 reply as go-redis's reader would, for
// the plain cases; ok is false when go-redis must decode it.
func decodeReply(cmd redis.Cmder, reply []byte) (err error, ok bool) {
	if len(reply) < 3 {
		return nil, false
	}
	eol := -1
	for i := 1; i+1 < len(reply); i++ {
		if reply[i] == '\r' && reply[i+1] == '\n' {
			eol = i
			break
		}
	}
	if eol < 0 {
		return nil, false
	}
	line := reply[1:eol]
	kind := reply[0]
	var text string // the reply read as go-redis's ReadString reads it
	switch kind {
	case '+', ':':
		text = string(line)
	case '$', '*':
		if string(line) == "-1" { // IsNilReply: redis.Nil
			if b, isBool := cmd.(*redis.BoolCmd); isBool {
				b.SetVal(false) // SET NX's nil is false (BoolCmd.readReply)
				return nil, true
			}
			switch cmd.(type) {
			case *redis.Cmd, *redis.StatusCmd, *redis.StringCmd, *redis.IntCmd:
				return redis.Nil, true
			}
			return nil, false
		}
		if kind == '*' {
			return nil, false
		}
		size, perr := strconv.Atoi(string(line))
		if perr != nil || size < 0 || len(reply) != eol+2+size+2 {
			return nil, false
		}
		text = string(reply[eol+2 : eol+2+size])
	default:
		return nil, false // errors and anything else: go-redis decodes
	}
	switch c := cmd.(type) {
	case *redis.Cmd:
		if kind == ':' {
			v, perr := strconv.ParseInt(text, 10, 64)
			if perr != nil {
				return nil, false
			}
			c.SetVal(v)
		} else {
			c.SetVal(text)
		}
	case *redis.StatusCmd:
		c.SetVal(text)
	case *redis.StringCmd:
		c.SetVal(text)
	case *redis.IntCmd:
		v, perr := strconv.ParseInt(text, 10, 64)
		if perr != nil {
			return nil, false
		}
		c.SetVal(v)
	case *redis.BoolCmd:
		c.SetVal(text == "OK" || text == "1" || text == "true")
	default:
		return nil, false
	}
	return nil, true
}

// replayClient decodes a reply with go-redis itself: an unmodified client
// whose connection answers any command with the given bytes. It is what
// makes every reply the direct path does not decode come out exactly as
// on the wire, error types included.
type replayClient struct {
	client  *redis.Client
	pending []byte // the reply the next read returns
	retired bool   // go-redis closed its connection after the reply
}

func (w *World) replay() *replayClient {
	if w.replayer == nil {
		r := &replayClient{}
		r.client = redis.NewClient(&redis.Options{
			Addr: "replay:6379", Protocol: 2, DisableIdentity: true, MaxRetries: -1,
			ReadTimeout: -2, WriteTimeout: -2, PoolSize: 1, ConnMaxIdleTime: -1,
			ReadBufferSize: 1024, WriteBufferSize: 1024,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return &replayConn{r: r}, nil
			},
		})
		w.replayer = r
		w.OnClose(func() { r.client.Close() })
	}
	return w.replayer
}

// decode fills cmd from reply; bad reports that go-redis retired its
// connection after this reply (isBadConn), as it would the real one.
func (r *replayClient) decode(cmd redis.Cmder, reply []byte) (err error, bad bool) {
	r.pending, r.retired = reply, false
	err = r.client.Process(context.Background(), cmd)
	r.pending = nil
	return err, r.retired
}

// replayConn is the replay client's connection: it swallows what go-redis
// writes and reads back the pending reply, after answering go-redis's
// handshake.
type replayConn struct {
	r         *replayClient
	handshake handshake
}

func (c *replayConn) Read(b []byte) (int, error) {
	if n, ok := c.handshake.read(b); ok {
		return n, nil
	}
	if len(c.r.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(b, c.r.pending)
	c.r.pending = c.r.pending[n:]
	return n, nil
}

func (c *replayConn) Write(b []byte) (int, error) {
	c.handshake.write(b)
	return len(b), nil
}
func (c *replayConn) Close() error                       { c.r.retired = true; return nil }
func (c *replayConn) LocalAddr() net.Addr                { return simAddr("replay") }
func (c *replayConn) RemoteAddr() net.Addr               { return simAddr("replay") }
func (c *replayConn) SetDeadline(t time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(t time.Time) error { return nil }

// handshake answers go-redis's HELLO on a connection its pool dialed,
// without a message: the connection go-redis thinks it opened is the
// direct path's, which did its own handshake on the simulated network
// when it dialed (directPath.conn). The answer is the one an old server
// gives (unknown command), after which go-redis goes on in RESP2 without
// authenticating, as it does after a successful HELLO 2.
type handshake struct {
	done  bool
	wbuf  []byte
	reply []byte
}

const unknownHello = "-ERR unknown command 'hello'\r\n"

// write takes go-redis's bytes while the handshake is on; it returns what
// follows the handshake, which belongs to the connection.
func (h *handshake) write(b []byte) (rest []byte, err error) {
	if h.done {
		return b, nil
	}
	h.wbuf = append(h.wbuf, b...)
	args, used, err := parseCommand(h.wbuf)
	if err != nil || used == 0 {
		return nil, err
	}
	all := h.wbuf
	h.done, h.wbuf = true, nil
	if !strings.EqualFold(args[0], "hello") {
		return all, nil // no handshake: all of it is the connection's
	}
	h.reply = []byte(unknownHello)
	return all[used:], nil
}

func (h *handshake) read(b []byte) (int, bool) {
	if len(h.reply) == 0 {
		return 0, false
	}
	n := copy(b, h.reply)
	h.reply = h.reply[n:]
	return n, true
}

// sharedConn is the net.Conn go-redis's pool holds for a client on the
// direct path: the commands go-redis sends itself (pipelines, arguments
// the direct path does not render) use the direct path's connection,
// dialing it when there is none, so both paths share one connection, as
// the wire path alone would have.
type sharedConn struct {
	d         *directPath
	bound     *redisConn // the connection the last command went out on
	handshake handshake
}

func (s *sharedConn) Write(b []byte) (int, error) {
	rest, err := s.handshake.write(b)
	if err != nil {
		return 0, err
	}
	if len(rest) == 0 {
		return len(b), nil
	}
	c, err := s.d.conn()
	if err != nil {
		return 0, err
	}
	s.bound = c
	if _, err := c.Write(rest); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (s *sharedConn) Read(b []byte) (int, error) {
	if n, ok := s.handshake.read(b); ok {
		return n, nil
	}
	if s.bound == nil {
		return 0, io.EOF
	}
	return s.bound.Read(b)
}

func (s *sharedConn) Close() error {
	if s.bound != nil && s.bound == s.d.cur {
		return s.bound.Close()
	}
	return nil
}

func (s *sharedConn) LocalAddr() net.Addr                { return simAddr("shared") }
func (s *sharedConn) RemoteAddr() net.Addr               { return simAddr("shared") }
func (s *sharedConn) SetDeadline(t time.Time) error      { return nil }
func (s *sharedConn) SetReadDeadline(t time.Time) error  { return nil }
func (s *sharedConn) SetWriteDeadline(t time.Time) error { return nil }
