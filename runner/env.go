package runner

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
)

// Env adapts a simulated process to the algorithms.Env interface; its Now
// is the host's wall clock.
func Env(p *sim.Process) algorithms.Env { return procEnv{p: p} }

// envWithClock is Env whose Now reads the given clock kind: the wall clock,
// or the host's oscillator (a monotonic clock, which steps do not move).
func envWithClock(p *sim.Process, kind string) algorithms.Env {
	return procEnv{p: p, mono: kind != scenarios.ClockWall}
}

type procEnv struct {
	p    *sim.Process
	mono bool
}

func (e procEnv) Now() time.Time {
	if e.mono {
		return e.p.Host.Clock.Oscillator().Time(e.p.TrueNow())
	}
	return e.p.Now()
}

func (e procEnv) Sleep(d time.Duration) { e.p.Sleep(d) }

func (e procEnv) Rand() *rand.Rand { return e.p.Rand() }

func (e procEnv) Context() context.Context { return e.p.Context() }

func (e procEnv) Go(fn func(algorithms.Env)) {
	e.p.GoBackground("watchdog", func(c *sim.Process) { fn(procEnv{p: c, mono: e.mono}) })
}

// Outside runs the lock's own code outside the kernel (see sim.Process.Outside).
func (e procEnv) Outside(fn func()) { e.p.Outside(fn) }

// Notify runs fn in the kernel from any goroutine of the lock's code; while
// the process's host is paused it waits for the resume (see
// sim.Process.Notify).
func (e procEnv) Notify(fn func()) { e.p.Notify(fn) }

func (e procEnv) Parallel(fns ...func(algorithms.Env)) {
	wrapped := make([]func(*sim.Process), len(fns))
	for i, fn := range fns {
		wrapped[i] = func(c *sim.Process) { fn(procEnv{p: c, mono: e.mono}) }
	}
	e.p.Parallel("req", wrapped...)
}
