package sim

import (
	"bufio"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// Reusing miniredis instances across runs (issue 24). A new instance
// registers every Redis command in a fresh table and starts a server
// (Dial): a few percent of a short exploration run, which builds five
// nodes. So an instance whose node can no longer be reached goes back to
// a pool, emptied, and a later node takes it instead of building one.
//
// What a new node must not see is anything of the old run. Everything a
// run leaves in an instance is reset or overwritten before reuse: the
// keys, TTLs and hash field TTLs of every database (FlushAll), the script
// cache (SCRIPT FLUSH), the database the direct API reads (Select 0), the
// random source (Seed, as for a new instance) and the clock (SetTime).
// WATCH versions survive a flush, but a WATCH only compares a key's
// version with itself later, so where they start does not show. What
// cannot be reset through miniredis's API keeps an instance out of the
// pool: a pub/sub subscriber, an instance that was handed out
// (RedisNode.Miniredis: the caller may keep it, set an error, require a
// password), one a restart replaced, and any instance of a world run in a
// testing/synctest bubble (its goroutines are not the kernel's).
// TestPooledMiniredisIsFresh replays a run's commands on a fresh and on a
// reused instance and compares every reply.
//
// The instance is released by a cleanup attached to its node
// (runtime.AddCleanup): it runs only once nothing can reach the node, so
// no code of the old run can touch the instance again. When that happens
// depends on the collector, but only which instance a node gets does, not
// what it holds, so runs stay deterministic.

var miniredisPool sync.Pool

// miniredisTicket is what the pool needs to know of one instance.
type miniredisTicket struct {
	mr       *miniredis.Miniredis
	poolable bool        // taken by a world outside a bubble
	handed   atomic.Bool // given out or replaced: never reused
}

// takeMiniredis returns an empty instance at now, seeded from the world's
// random source, reused when the pool has one; the world closes it at its
// end unless it may go back to the pool.
func takeMiniredis(w *World, now time.Time) (*miniredis.Miniredis, *miniredisTicket) {
	seed := int(w.rng.Int64N(1 << 31))
	var mr *miniredis.Miniredis
	pool := w.rt.miniredisPool()
	if pool != nil {
		mr, _ = pool.Get().(*miniredis.Miniredis)
	}
	if mr == nil {
		mr = miniredis.NewMiniRedis()
		// Dial is the only exported way to give miniredis a server
		// without a listener; we never use the pipe it returns, commands
		// go through Dispatch.
		if c, err := mr.Dial(); err == nil {
			c.Close()
		}
	}
	mr.Seed(seed)
	// TTLs follow the node's clock through FastForward, when a command
	// could tell (redis_clock.go), not through ClockTTL's tick.
	mr.SetTime(now)
	t := &miniredisTicket{mr: mr, poolable: pool != nil}
	w.OnClose(func() {
		if !t.poolable || t.handed.Load() {
			mr.Close()
		}
	})
	return mr, t
}

// attachMiniredis gives n its instance and arranges its return to the
// pool once n is unreachable.
func (n *RedisNode) attachMiniredis(now time.Time) {
	if n.ticket != nil {
		n.ticket.handed.Store(true) // a restart: the old instance is closed
	}
	n.mr, n.ticket = takeMiniredis(n.w, now)
	if n.ticket.poolable {
		runtime.AddCleanup(n, releaseMiniredis, n.ticket)
	}
}

// releaseMiniredis empties an instance nothing can reach any more and puts
// it in the pool, unless something of it could outlive the reset.
func releaseMiniredis(t *miniredisTicket) {
	if t.handed.Load() {
		return
	}
	mr := t.mr
	if len(mr.PubSubChannels("")) > 0 || mr.PubSubNumPat() > 0 {
		return
	}
	mr.FlushAll()
	mr.Select(0)
	mr.Server().Dispatch(server.NewPeer(bufio.NewWriter(io.Discard)), []string{"SCRIPT", "FLUSH"})
	miniredisPool.Put(mr)
}
