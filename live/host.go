package live

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/locklab/locklab/algorithms"
)

// clientHost is one client process of a live run: the lock's code runs in
// this Go process, so a client's pause, hang and crash are the harness's
// to make (docs/live.md). What each means here:
//
//   - pause (a stop-the-world GC, SIGSTOP): every goroutine of the client
//     stops at its next call into Env or the store, its proxy holds the
//     replies coming to it and sends nothing for it, and its request
//     timeouts do not run; at resume everything goes on in arrival order.
//   - hang: only the worker stops (at its next call into Env or the
//     store); background goroutines (a watchdog) go on.
//   - crash: every goroutine of the client ends at its next call into Env
//     or the store, and its connections are closed.
//
// A real process can be stopped between any two instructions; the harness
// stops the client at the next point it reaches the world (Env, the
// network, the store), which for a lock's code is where a pause matters.
type clientHost struct {
	Name string

	mu       sync.Mutex
	wake     *sync.Cond
	paused   bool
	pausedAt time.Time
	// pausedFor is the total time the client has spent paused, so that
	// its clock-driven timeouts can leave the pauses out.
	pausedFor time.Duration
	hung      bool
	crashed   bool
	cancel    context.CancelFunc
	ctx       context.Context

	// The client's clock: true elapsed time at rate 1+ppm/1e6, plus
	// offset (clock-jump faults move it).
	base   time.Time
	offset time.Duration
	ppm    int64
	seed   uint64
	// mono is set for a client that times its lease on a monotonic clock
	// (Go's time.Since): a clock-jump does not move it.
	mono bool
}

func newClientHost(name string, base time.Time, offset time.Duration, ppm int64, seed uint64) *clientHost {
	c := &clientHost{Name: name, base: base, offset: offset, ppm: ppm, seed: seed}
	c.wake = sync.NewCond(&c.mu)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// checkpoint is where the client meets its faults: it waits out a pause
// (and, for the worker, a hang), and a crashed client's goroutine ends
// here.
func (c *clientHost) checkpoint(worker bool) {
	c.mu.Lock()
	for (c.paused || worker && c.hung) && !c.crashed {
		c.wake.Wait()
	}
	crashed := c.crashed
	c.mu.Unlock()
	if crashed {
		runtime.Goexit()
	}
}

// waitRunning blocks while the client is paused; it reports false once the
// client has crashed (for the proxy, which must not end its own goroutine).
func (c *clientHost) waitRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.paused && !c.crashed {
		c.wake.Wait()
	}
	return !c.crashed
}

func (c *clientHost) pause(d time.Duration) {
	c.mu.Lock()
	if !c.paused {
		c.paused, c.pausedAt = true, time.Now()
	}
	c.mu.Unlock()
	time.AfterFunc(d, c.resume)
}

func (c *clientHost) resume() {
	c.mu.Lock()
	if c.paused {
		c.paused = false
		c.pausedFor += time.Since(c.pausedAt)
	}
	c.wake.Broadcast()
	c.mu.Unlock()
}

func (c *clientHost) hang(d time.Duration) {
	c.mu.Lock()
	c.hung = true
	c.mu.Unlock()
	if d > 0 {
		time.AfterFunc(d, func() {
			c.mu.Lock()
			c.hung = false
			c.wake.Broadcast()
			c.mu.Unlock()
		})
	}
}

func (c *clientHost) crash() {
	c.mu.Lock()
	c.crashed = true
	c.wake.Broadcast()
	c.mu.Unlock()
	c.cancel()
}

func (c *clientHost) isCrashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// runningSince is how long the client has run (not paused) since t.
func (c *clientHost) runningSince(t time.Time, pausedThen time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	paused := c.pausedFor - pausedThen
	if c.paused {
		paused += time.Since(c.pausedAt)
	}
	return time.Since(t) - paused
}

func (c *clientHost) pausedTotal() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pausedFor
}

// jump steps the client's wall clock; it reports false for a client on a
// monotonic clock, which the step does not move.
func (c *clientHost) jump(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mono {
		return false
	}
	c.offset += d
	return true
}

func (c *clientHost) drift(ppm int64) {
	c.mu.Lock()
	// Keep the clock continuous at the change: fold the time so far into
	// the offset, then run at the new rate from here.
	now := time.Now()
	elapsed := now.Sub(c.base)
	c.offset += time.Duration(int64(elapsed) / 1_000_000 * c.ppm)
	c.offset -= time.Duration(int64(elapsed) / 1_000_000 * ppm)
	c.ppm = ppm
	c.mu.Unlock()
}

// rate is the client's clock rate offset, read under the lock a drift
// fault changes it under.
func (c *clientHost) rate() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ppm
}

// now is the client's wall clock.
func (c *clientHost) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	elapsed := time.Since(c.base)
	return c.base.Add(elapsed + time.Duration(int64(elapsed)/1_000_000*c.ppm) + c.offset)
}

// env is the algorithms.Env the client's lock runs with: its goroutines
// are real goroutines, its sleeps real sleeps that a pause lengthens, its
// clock the client's own. worker marks the workload's goroutine, the one a
// hang stops.
type env struct {
	c      *clientHost
	worker bool
	// rng is this goroutine's own source: a *rand.Rand is not safe for
	// concurrent use, so each goroutine Parallel or Go starts gets one
	// seeded from its parent's.
	rng *rand.Rand
}

var _ algorithms.Env = env{}

// workerEnv is the Env of the client's workload goroutine.
func (c *clientHost) workerEnv() env {
	return env{c: c, worker: true, rng: rand.New(rand.NewPCG(c.seed, 0x11fe))}
}

func (e env) Now() time.Time {
	e.c.checkpoint(e.worker)
	return e.c.now()
}

// Sleep waits d on the client's oscillator; a pause during the sleep
// lengthens it, since a paused process's timers do not run.
func (e env) Sleep(d time.Duration) {
	e.c.checkpoint(e.worker)
	if ppm := e.c.rate(); ppm != 0 {
		d = time.Duration(float64(d) / (1 + float64(ppm)/1e6))
	}
	start, pausedThen := time.Now(), e.c.pausedTotal()
	for {
		left := d - e.c.runningSince(start, pausedThen)
		if left <= 0 {
			break
		}
		time.Sleep(left)
		e.c.checkpoint(e.worker)
	}
	e.c.checkpoint(e.worker)
}

func (e env) Rand() *rand.Rand { return e.rng }

func (e env) Context() context.Context { return e.c.ctx }

func (e env) Parallel(fns ...func(algorithms.Env)) {
	e.c.checkpoint(e.worker)
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		child := e.child()
		go func() {
			defer wg.Done()
			fn(child)
		}()
	}
	wg.Wait()
	e.c.checkpoint(e.worker)
}

func (e env) Go(fn func(algorithms.Env)) {
	e.c.checkpoint(e.worker)
	go fn(e.child())
}

// child is the Env of a goroutine e starts: not the worker, with a source
// of its own.
func (e env) child() env {
	return env{c: e.c, rng: rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64()))}
}
