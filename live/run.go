// Package live runs a scenario file against real servers in real time:
// the scenario's Redis nodes as redis-server processes on 127.0.0.1, the
// same algorithm code with real go-redis clients, the scenario's faults
// made for real (a proxy per client–server link for message faults,
// SIGKILL for a node crash, the harness for client pauses and clocks), and
// the same checker over a history with real timestamps. Live runs are the
// one place locklab uses the wall clock: they are not deterministic and
// not replayable, and say so; docs/live.md says what each fault becomes.
package live

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// Options tunes a live run.
type Options struct {
	// Seed seeds the clients' random draws (start times, tokens, jitter).
	// It does not make a live run repeatable: real time decides the rest.
	Seed uint64
	// Timeout is how long a client waits for a Redis reply when the
	// scenario sets no clients.timeout: by default 50ms, the simulation's
	// (sim.ClientOptions). A loaded machine's scheduler can exceed it on
	// its own; raise it there (locklab live --timeout).
	Timeout time.Duration
	// TempDir is where the run makes its directory (default: the system's).
	TempDir string
	// Log, when set, receives a line per fault as it is applied.
	Log func(string)
}

// Run runs sc live. ctx cancels it (Ctrl-C): the servers are stopped and
// their directories removed whatever happens.
func Run(ctx context.Context, sc *scenarios.Scenario, opt Options) (*runner.Result, error) {
	info, err := algorithms.Lookup(sc.Algorithm)
	if err != nil {
		return nil, err
	}
	if err := expressible(sc, info); err != nil {
		return nil, err
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 50 * time.Millisecond
	}
	b, err := newBackend(sc, info)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(opt.TempDir, "locklab-live-")
	if err != nil {
		return nil, err
	}
	// The servers may run as another user (Postgres refuses root), who
	// must reach their directories.
	os.Chmod(root, 0o755)
	defer func() {
		if os.Getenv("LOCKLAB_LIVE_KEEP") == "" {
			os.RemoveAll(root)
		}
	}()
	r := &run{sc: sc, opt: opt, backend: b, clients: map[string]*clientHost{}}
	defer r.close()
	if err := b.start(root, opt); err != nil {
		return nil, err
	}
	return r.execute(ctx)
}

// run is one live run in progress.
type run struct {
	sc       *scenarios.Scenario
	opt      Options
	backend  backend
	clients  map[string]*clientHost
	fabric   *fabric
	store    *store
	rec      *recorder
	start    time.Time
	messages atomic.Int64

	inflight sync.WaitGroup

	mu      sync.Mutex
	applied []faults.Applied
	timers  []*time.Timer
}

func (r *run) close() {
	r.mu.Lock()
	for _, t := range r.timers {
		t.Stop()
	}
	r.mu.Unlock()
	for _, c := range r.clients {
		c.crash()
	}
	r.backend.close()
}

// since is the run's clock: real time since the run began.
func (r *run) since() time.Duration { return time.Since(r.start) }

// execute builds the clients, arms the faults, runs the workload until
// every client is done or the scenario's duration is up, and checks.
func (r *run) execute(ctx context.Context) (*runner.Result, error) {
	sc := r.sc
	r.start = time.Now()
	rng := rand.New(rand.NewPCG(r.opt.Seed, 0x11fe1))
	r.fabric = &fabric{start: r.start, rng: rand.New(rand.NewPCG(r.opt.Seed, 0xfab)), fire: r.apply, latency: sc.Network.Latency.D(), jitter: sc.Network.Jitter.D()}
	r.rec = &recorder{clock: r.since, open: map[string]*openHold{}, wanting: map[string]time.Duration{}, mode: sc.ModeOf}
	r.store = &store{value: sc.Resource.Initial, initial: sc.Resource.Initial, rule: sc.Resource.TokenCheck, fabric: r.fabric, clock: r.since, wait: time.Second, inflight: &r.inflight, reliable: sc.Resource.Reliable}
	res := &runner.Result{Scenario: sc, Seed: r.opt.Seed}
	res.Hosts = append(res.Hosts, r.backend.hosts()...)
	res.Hosts = append(res.Hosts, runner.Host{Name: scenarios.ResourceHost, Role: "resource"})

	var wg sync.WaitGroup
	var starts []func()
	for i, name := range sc.ClientNames() {
		over := sc.Clients.Each[name]
		var offset time.Duration
		var ppm int64
		if over.Offset != nil {
			offset = over.Offset.D()
		}
		if over.PPM != nil {
			ppm = *over.PPM
		}
		c := newClientHost(name, r.start, offset, ppm, r.opt.Seed+uint64(i)*0x9e3779b97f4a7c15)
		// A client reads a monotonic clock unless it says wall (as a
		// simulated one does, runner/env.go envWithClock): a step of
		// the wall clock does not move it.
		kind := sc.Clients.Clock
		if over.Clock != nil {
			kind = *over.Clock
		}
		c.mono = kind != scenarios.ClockWall
		r.clients[name] = c
		res.Hosts = append(res.Hosts, runner.Host{Name: name, Role: "client", Offset: offset, PPM: ppm})
		lock, err := r.buildLock(c)
		if err != nil {
			return nil, fmt.Errorf("algorithm %s: %w", sc.Algorithm, err)
		}
		plan := sc.Plan(name)
		start := scenarios.Draw(rng, plan.Start)
		wl := &workload{r: r, c: c, lock: lock, plan: plan, rng: rand.New(rand.NewPCG(r.opt.Seed, uint64(i)))}
		starts = append(starts, func() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if c.isCrashed() {
						r.rec.crash(name)
					}
				}()
				time.Sleep(start)
				wl.run()
			}()
		})
	}
	// The run's clock starts now, with every client connected.
	r.start = time.Now()
	r.messages.Store(0)
	// Faults are armed before any client starts, so that a fault waiting
	// for a client's first message cannot miss it.
	r.arm()
	for _, s := range starts {
		s()
	}

	// The run ends when every client has ended and nothing is still on
	// its way to the store (docs/design.md, "Fidelity rules"), or at the
	// scenario's duration.
	done := make(chan struct{})
	go func() { wg.Wait(); r.inflight.Wait(); close(done) }()
	deadline := time.NewTimer(sc.Duration.D())
	defer deadline.Stop()
	var cancelled error
	select {
	case <-done:
	case <-deadline.C:
	case <-ctx.Done():
		cancelled = ctx.Err()
	}
	res.End = r.since()
	res.History = r.rec.finish(res.End, r.store)
	r.mu.Lock()
	res.Applied = append([]faults.Applied(nil), r.applied...)
	r.mu.Unlock()
	if cancelled != nil {
		return nil, fmt.Errorf("live run of %s stopped: %w", sc.ID, cancelled)
	}
	res.Report = checker.Check(res.History, runner.CheckerOptions(sc, res.Applied, res.End))
	res.Messages = int(r.messages.Load())
	return res, nil
}

// buildLock builds one client's lock on connections to the real servers
// through the client's links.
func (r *run) buildLock(c *clientHost) (algorithms.Lock, error) {
	conns, err := r.backend.connect(r, c)
	if err != nil {
		return nil, fmt.Errorf("connecting %s: %w", c.Name, err)
	}
	return algorithms.Build(r.sc.Algorithm, r.sc.LockParams(c.Name), conns)
}
