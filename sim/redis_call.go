package sim

import "github.com/locklab/locklab/sim/event"

// redisCall is one command on a redisConn, from the request's landing on
// the node to the reply's landing at the client. It used to be three
// closures made for every command (the request's landing, the reply
// function, the reply's landing): a tenth of an exploration's bytes
// (issue 24). A call carries the same state as fields, its three
// functions are bound once when the call is made, and a call whose reply
// has landed is kept by its connection for the next command. A call whose
// request or reply is lost on the way is never landed and never reused:
// only a call nothing can reach any more is handed out again, so reuse
// changes no run.
type redisCall struct {
	c       *redisConn
	args    []string
	op      string
	summary string
	order   string
	// reply and rs are the node's reply and its summary, once it ran.
	reply []byte
	rs    string

	onRequest func()
	respondFn func([]byte)
	onReply   func()
}

// newCall returns the connection's free call, or a new one.
func (c *redisConn) newCall() *redisCall {
	if r := c.free; r != nil {
		c.free = nil
		return r
	}
	r := &redisCall{c: c}
	r.onRequest, r.respondFn, r.onReply = r.request, r.respond, r.land
	return r
}

// request is the command's landing on the node: it runs there (WAIT
// replies later, when enough replicas acknowledge) and the reply leaves.
func (r *redisCall) request() {
	c := r.c
	if c.peer == nil {
		c.peer = c.node.NewPeer()
	}
	if r.op == "WAIT" {
		c.node.wait(r.args, r.respondFn)
		return
	}
	r.respond(c.node.Exec(c.peer, r.args))
}

// respond sends the node's reply back to the client.
func (r *redisCall) respond(reply []byte) {
	c := r.c
	w := c.node.w
	var rs string
	if w.Tracing() || c.bb != nil {
		rs = replySummary(reply)
	}
	if w.Tracing() {
		w.Record(c.node.Name, event.Event{Kind: event.CommandExecuted, Node: c.node.Name, Client: c.host.Name, Op: r.op, Command: r.summary, Args: r.args, Reply: rs, Clock: c.node.Clock.Local(w.now)})
	}
	r.reply, r.rs = reply, rs
	rep := w.Net.newMessage()
	*rep = Message{Conn: c.id, From: c.node.Name, To: c.host.Name, Client: c.host.Name, Dir: Reply, Op: r.op, Summary: r.summary + " → " + rs, order: r.order}
	w.Net.Send(rep, r.onReply)
}

// land is the reply's landing at the client: it is read, or discarded if
// the client closed the connection meanwhile. The call is then free.
func (r *redisCall) land() {
	c := r.c
	w := c.node.w
	reply, rs := r.reply, r.rs
	*r = redisCall{c: c, onRequest: r.onRequest, respondFn: r.respondFn, onReply: r.onReply}
	c.free = r
	if c.bb != nil {
		c.bubbleDeliver(reply, rs)
		return
	}
	if c.closed {
		w.Record(c.host.Name, event.Event{Kind: event.ReplyDiscarded, Node: c.node.Name, Client: c.host.Name, Reply: rs})
		return
	}
	c.rbuf = append(c.rbuf, reply...)
	if c.waiter != nil {
		w.wakeup(c.waiter, c.waitID)
	}
}
