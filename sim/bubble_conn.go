package sim

// The simulated Redis connection in a bubble (see bubble.go): a library
// goroutine enters the kernel to write and to read, and waits outside it
// for a reply, a timeout or the end of its client.

import (
	"errors"
	"fmt"
	"github.com/locklab/locklab/sim/event"
)

var errHostDown = errors.New("simulated connection: client host crashed")

// dialed gives a new connection its identity in the bubble: the host, the
// node and how many times the host dialed it.
func (b *bubble) dialed(c *redisConn) {
	pair := c.host.Name + ">" + c.node.Name
	b.dials[pair]++
	id := fmt.Sprintf("%s#%d", pair, b.dials[pair])
	c.bb = &connBubble{b: b, id: id, who: "c " + id, ready: make(chan struct{}, 1)}
	b.conns = append(b.conns, c)
}

// dead reports whether the connection can no longer carry anything.
func (c *redisConn) dead() bool {
	return c.closed || c.host.crashed || c.bb.b.ended
}

func (c *redisConn) signal() {
	if c.bb.waiting {
		select {
		case c.bb.ready <- struct{}{}:
		default:
		}
	}
}

func (c *redisConn) bubbleWrite(data []byte) (int, error) {
	w, b := c.node.w, c.bb.b
	b.enter(c.bb.who)
	defer b.leave()
	b.gateAct(c.host)
	if c.dead() {
		if c.host.crashed {
			return 0, errHostDown
		}
		return 0, errConnClosed
	}
	c.wbuf = append(c.wbuf, data...)
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
	return len(data), nil
}

// bubbleDeliver hands a reply to the connection (kernel context).
func (c *redisConn) bubbleDeliver(reply []byte, rs string) {
	w := c.node.w
	switch {
	case c.closed || c.host.crashed:
		w.Record(c.host.Name, event.Event{Kind: event.ReplyDiscarded, Node: c.node.Name, Client: c.host.Name, Reply: rs})
	case c.host.paused:
		c.host.hold(func() { c.bubbleDeliver(reply, rs) })
	default:
		c.rbuf = append(c.rbuf, reply...)
		c.signal()
	}
}

func (c *redisConn) bubbleTimeout(id uint64) {
	if c.host.paused {
		c.host.hold(func() { c.bubbleTimeout(id) })
		return
	}
	if c.bb.waiting && c.bb.reads == id {
		c.bb.timedOut = true
		c.signal()
	}
}

func (c *redisConn) bubbleRead(data []byte) (int, error) {
	w, b := c.node.w, c.bb.b
	who := c.bb.who
	b.enter(who)
	defer b.leave()
	b.gate(c.host)
	if len(c.rbuf) == 0 && !c.dead() {
		c.bb.reads++
		id := c.bb.reads
		select {
		case <-c.bb.ready:
		default:
		}
		c.bb.waiting, c.bb.timedOut = true, false
		var timer *Event
		if c.readTimeout >= 0 {
			timer = w.At(w.Later(c.host.Clock.TrueDuration(w.now, c.readTimeout)), func() { c.bubbleTimeout(id) })
		}
		for len(c.rbuf) == 0 && !c.bb.timedOut && !c.dead() {
			b.leave()
			<-c.bb.ready
			b.enter(who)
		}
		c.bb.waiting = false
		timer.Cancel()
	}
	if len(c.rbuf) > 0 {
		n := copy(data, c.rbuf)
		c.rbuf = c.rbuf[n:]
		return n, nil
	}
	if c.host.crashed {
		return 0, errHostDown
	}
	if c.dead() {
		return 0, errConnClosed
	}
	w.Record(c.host.Name, event.Event{Kind: event.ReplyTimeout, Node: c.node.Name, Client: c.host.Name})
	return 0, timeoutError{}
}

func (c *redisConn) bubbleClose() error {
	w, b := c.node.w, c.bb.b
	b.enter(c.bb.who)
	defer b.leave()
	b.gateAct(c.host)
	if !c.closed {
		c.closed = true
		if !b.ended {
			w.Record(c.host.Name, event.Event{Kind: event.ConnectionClosed, Node: c.node.Name, Client: c.host.Name})
		}
		c.signal()
	}
	return nil
}
