package sim

// The runtime: how a world runs its processes. A world has exactly one,
// chosen when it is built and never changed: the coroutine kernel
// (kernel.go), which New installs, or the synctest bubble (bubble.go),
// which UseBubble installs before anything is built on the world. World,
// Host, Process and Network hold what both share — true time, the event
// queue, the seeded source, the hosts, processes and messages — and ask the
// runtime wherever the two differ, instead of testing which one they run
// on (runtime_test.go keeps it so; docs/architecture.md, "How a run
// flows").

import (
	"context"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Runtime is where the coroutine kernel and the synctest bubble differ:
// how events are keyed and the loop that runs them, how a process starts,
// parks, wakes and is killed, what a paused or crashed host does with its
// work, how lock code leaves and re-enters the simulation, how the draws
// and the arrival order of a message are made, and how a simulated Redis
// client is set up. Its methods are unexported: the two implementations
// are the package's own.
type Runtime interface {
	// run is World.Run's loop: events in order until limit, the end of
	// the work budget, or the end of every process; the run-end hooks run
	// before it returns the run's failure.
	run(limit time.Duration) error
	// shutdown ends, once the loop is over, what it left alive (World
	// runs the closers after it).
	shutdown()
	// queued hears of every event as it is queued, before it enters the
	// queue; with auto it gives the event scheduled by At its key (the
	// bubble orders one instant's events by who scheduled them).
	queued(e *Event, auto bool)

	// start makes p's goroutine run fn at its first wake-up.
	start(p *Process, fn func(p *Process))
	// park hands the simulation back until p's next wake-up; parkIdle is
	// park for the kernel's own waits (Process.parkIdle).
	park(p *Process)
	parkIdle(p *Process) bool
	// wake lets a parked p go on (World.wakeup has checked the wake-up).
	wake(p *Process)
	// kill ends p, which has not ended yet.
	kill(p *Process)

	// holdWake keeps a wake-up of p (parked with id) that arrived while
	// its host is paused, for Resume.
	holdWake(p *Process, id uint64)
	// thaw releases what a resumed host held, before the host hooks run.
	thaw(h *Host)
	// crashed cuts a crashed host's lock code off.
	crashed(h *Host)
	// context is the context handed to h's lock code.
	context(h *Host) context.Context

	// The doors between lock code and the simulation (freeze.go), each
	// a begin and an end around the caller's own call of its function,
	// so that the function never passes through the interface (it would
	// escape to the heap at every door, under the kernel too).
	// outsideBegin and outsideEnd bracket Process.Outside's lock code;
	// insideBegin, when it reports true, and insideEnd bracket
	// Process.Inside's function; notifyBegin, which reports whether the
	// function is to run, and notifyEnd bracket World.Notify,
	// World.NotifyFrom and their kin (h may be nil, then name looks it
	// up); awaitThaw is World.AwaitThaw.
	outsideBegin(p *Process)
	outsideEnd(p *Process)
	insideBegin(p *Process) bool
	insideEnd(p *Process)
	notifyBegin(h *Host, name, who string, act bool) bool
	notifyEnd()
	awaitThaw(h *Host, name, who string)

	// message starts the draws about one message and returns its event
	// key; endMessage, given what message returned, ends them (a nil
	// saved source has nothing to give back, and needs no call).
	message(m *Message) (key string, saved *rand.Rand)
	endMessage(saved *rand.Rand)
	// arrival is when m, due at at, lands, keeping each connection's
	// messages in order as TCP does.
	arrival(m *Message, at time.Duration) time.Duration

	// redisClient adjusts a simulated go-redis client's options for the
	// runtime, before NewClient builds it, and returns o as the runtime
	// allows it; redisDialer is the client's dialer, and dialed hears of
	// every connection it makes.
	redisClient(o ClientOptions, opt *redis.Options) ClientOptions
	redisDialer(host *Host, dial func() *redisConn) func(ctx context.Context, network, addr string) (net.Conn, error)
	dialed(c *redisConn)
	// miniredisPool is where idle miniredis instances wait for the next
	// world, or nil if this runtime's may not be shared (redis_pool.go).
	miniredisPool() *sync.Pool

	// steps counts the loop's steps, for a watchdog outside the run.
	steps() uint64
	// virtualTime is true time t on the clock library code reads.
	virtualTime(t time.Duration) time.Time
}
