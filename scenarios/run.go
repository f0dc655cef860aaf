package scenarios

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/sim/event"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim"
)

// Options tunes a run.
type Options struct {
	// KeepTrace keeps every trace line in the result (reports need them);
	// the digest is computed either way.
	KeepTrace bool
	// PlainLua turns off the native fast path for lock scripts, so every
	// EVAL runs in miniredis's Lua (for equivalence tests).
	PlainLua bool
	// CheckTimeout is ignored. The checker has no timeout any more: its
	// mutual-exclusion search is linear and always finishes, so no verdict
	// depends on machine speed (issue 10).
	//
	// Deprecated: ignored; kept so that older callers still compile.
	CheckTimeout time.Duration
	// NoTrace skips the event trace (and its digest) for speed.
	NoTrace bool
	// Sink, when set, receives every event of the run in trace order with
	// its text line (sim.Trace.Sink): locklab streams --events and --trace
	// through it, so they need no kept trace. RunCompared gives it to the
	// scenario's own run only.
	Sink func(e *event.Event, text []byte)
	// KeepBudget bounds the bytes KeepTrace holds (sim.Trace.KeepBudget;
	// 0: no bound); Result.TraceTruncated says when it ran out.
	KeepBudget int64
	// Direct hands go-redis's commands to the simulated nodes without
	// RESP framing on the client side (sim.ClientOptions.Direct): the same
	// run, digest and verdict, faster. Explore and matrix use it; run and
	// reports keep the wire path.
	Direct bool
	// Factory, when set, builds every client's lock instead of the
	// scenario's registered algorithm (a user's own lock).
	Factory algorithms.Factory
	// MaxWork is the run's work budget (default: the scenario's
	// Limits.Work): a run that does more work ends there, with a verdict
	// on the history so far and Result.Stopped set. Memory grows with the
	// work a run does; this bounds it whatever the file asks.
	MaxWork int
	// Bubble runs the world inside the calling testing/synctest bubble, for
	// lock code with goroutines and timers of its own (sim/bubble.go): a
	// Factory's lock, or an algorithm whose Info.Bubble is set, called
	// through Outside. Run sets it itself for such an algorithm, and opens
	// the bubble through package sim/bubblehost when the caller is not in
	// one.
	Bubble bool
	// Prepare, when set, is called with the run's seed before the world is
	// built (locktest seeds the process-wide random sources a library
	// draws from with it).
	Prepare func(seed uint64)
}

// Host describes one simulated host of a run, for reports.
type Host struct {
	Name   string            `json:"name"`
	Role   string            `json:"role"` // "client", "redis", "resource", or a backend's role
	Clock  []sim.ClockChange `json:"clock_changes,omitempty"`
	Offset time.Duration     `json:"offset_ns,omitempty"`
	PPM    int64             `json:"ppm,omitempty"`
}

// Metric is a named figure a backend reports (for example watch
// notifications in ZooKeeper).
type Metric struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// Result is everything a run produced.
type Result struct {
	Scenario *Scenario       `json:"-"`
	Seed     uint64          `json:"seed"`
	Report   *checker.Report `json:"-"`
	History  checker.History `json:"history"`
	Applied  []faults.Applied
	Hosts    []Host
	Metrics  []Metric
	// TraceSHA256 is the digest of the full event trace.
	TraceSHA256 string
	TraceLines  int
	Trace       []sim.TraceEntry
	// Events are the run's typed record (kept with KeepTrace); Trace is
	// these events rendered as text.
	Events []event.Event
	// TraceTruncated is set when Options.KeepBudget stopped the keeping:
	// Trace and Events then hold a prefix of the run's record, and the
	// digest still covers all of it. TraceKeptBytes is what was kept.
	TraceTruncated bool  `json:"-"`
	TraceKeptBytes int64 `json:"-"`
	Messages       int
	Dropped        int
	End            time.Duration
	// Work is the kernel's work in the run: events scheduled, messages
	// lost and bytes carried (sim/budget.go).
	Work int64
	// Stopped is set when a limit ended the run before its duration:
	// End is then the cut, and the verdict covers the history up to it.
	Stopped *Stop `json:"stopped,omitempty"`
	// Warnings name faults that changed nothing: never fired, or matched
	// no message.
	Warnings []string
	// DirectCommands counts the commands that took the direct path
	// (Options.Direct), for tests that it was taken.
	DirectCommands int `json:"-"`
}

// Matches reports whether every property the scenario asserts came out as
// expected.
func (r *Result) Matches() bool {
	e, v := r.Scenario.Expect, r.Report.Verdict
	return (e.MutualExclusion == "" || e.MutualExclusion == v.MutualExclusion) &&
		(e.Resource == "" || e.Resource == v.Resource) &&
		(e.Liveness == "" || e.Liveness == v.Liveness) &&
		len(r.MetricsOverBound()) == 0
}

// MetricsOverBound names, in order, the bounded metrics (at_most)
// that the run exceeded or did not report.
func (r *Result) MetricsOverBound() []string {
	var over []string
	for _, name := range sortedKeys(r.Scenario.AtMost) {
		v, ok := r.Metric(name)
		if !ok || v > r.Scenario.AtMost[name] {
			over = append(over, name)
		}
	}
	return over
}

// Metric returns the backend metric called name, if the run reported it.
func (r *Result) Metric(name string) (int64, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// Env adapts a simulated process to the algorithms.Env interface; its Now
// is the host's wall clock.
func Env(p *sim.Process) algorithms.Env { return procEnv{p: p} }

// envWithClock is Env whose Now reads the given clock kind: the wall clock,
// or the host's oscillator (a monotonic clock, which steps do not move).
func envWithClock(p *sim.Process, kind string) algorithms.Env {
	return procEnv{p: p, mono: kind != ClockWall}
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
func (e procEnv) Sleep(d time.Duration)    { e.p.Sleep(d) }
func (e procEnv) Rand() *rand.Rand         { return e.p.Rand() }
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

func draw(rng *rand.Rand, r Range) time.Duration {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + time.Duration(rng.Int64N(int64(r.Max-r.Min)+1))
}

// Run executes the scenario with the given seed and checks the history.
func Run(sc *Scenario, seed uint64, opt Options) (*Result, error) {
	info, err := algorithms.Lookup(sc.Algorithm)
	if err != nil {
		if opt.Factory == nil {
			return nil, err
		}
		info = algorithms.Info{Name: sc.Algorithm, Backend: algorithms.Backend}
	}
	if info.Bubble && opt.Factory == nil && !opt.Bubble {
		return runInBubble(sc, seed, opt, info)
	}
	if opt.Prepare != nil {
		opt.Prepare(seed)
	}
	w := sim.New(seed)
	if opt.Bubble {
		w.UseBubble()
	}
	w.Trace.Keep = opt.KeepTrace
	w.Trace.Off = opt.NoTrace && !opt.KeepTrace && opt.Sink == nil
	w.Trace.Sink = opt.Sink
	w.Trace.KeepBudget = opt.KeepBudget
	if sc.Network.Latency > 0 {
		w.Net.Latency = sc.Network.Latency.D()
	}
	if sc.Network.Jitter > 0 {
		w.Net.Jitter = sc.Network.Jitter.D()
	}
	res := &Result{Scenario: sc, Seed: seed}
	targets := faults.Targets{Clients: map[string]*sim.Host{}, Nodes: map[string]*sim.RedisNode{}, Hosts: map[string]*sim.Host{}, Servers: map[string]faults.Server{}}
	if sc.Resource.Reliable {
		targets.Spared = map[string]bool{ResourceHost: true}
	}

	var lockNodes []*sim.RedisNode
	var tokenNode *sim.RedisNode
	for _, spec := range sc.Nodes {
		n := w.NewRedisNode(spec.Name, sim.NewClock(spec.Offset.D(), spec.PPM))
		n.MinReplicasToWrite, n.MinReplicasMaxLag = spec.MinReplicasToWrite, spec.MinReplicasMaxLag.D()
		if n.MinReplicasMaxLag == 0 {
			n.MinReplicasMaxLag = 10 * time.Second
		}
		if !opt.PlainLua {
			n.ScriptFastPath = sim.NativeScripts
		}
		switch {
		case spec.Role == "tokens":
			tokenNode = n
		case spec.Replica == "":
			lockNodes = append(lockNodes, n)
		}
		targets.Nodes[spec.Name] = n
		targets.Hosts[spec.Name] = n.Host
		role := "redis"
		if spec.Replica != "" {
			role = "redis replica of " + spec.Replica
		} else if spec.Role != "" {
			role = "redis " + spec.Role
		}
		res.Hosts = append(res.Hosts, Host{Name: spec.Name, Role: role, Offset: spec.Offset.D(), PPM: spec.PPM})
	}
	if start, ok := sc.Params["fence_start"]; ok {
		// Pre-existing history of the counter (Kleppmann's example starts
		// at 33), on the token node or the first lock node. It is written
		// as a client's write is, so it is in the node's AOF; its replicas
		// get it from their initial synchronisation below.
		seed := tokenNode
		if seed == nil && len(lockNodes) > 0 {
			seed = lockNodes[0]
		}
		if seed != nil {
			seed.Apply("SET", algorithms.FenceKey(sc.Key), start)
		}
	}
	for _, spec := range sc.Nodes {
		if spec.Replica != "" {
			lag := spec.Lag.D()
			if lag == 0 {
				lag = 100 * time.Millisecond
			}
			targets.Nodes[spec.Replica].Replicate(targets.Nodes[spec.Name], lag)
		}
	}
	rule := sim.FenceRule(sc.Resource.Fencing)
	inv := w.NewInventory(ResourceHost, sc.Resource.Initial, rule)
	targets.Hosts[ResourceHost] = inv.Host

	var backend Backend
	desc, ok := backendInfos[info.Backend]
	if !ok {
		return nil, fmt.Errorf("algorithm %s needs backend %q, which is not built in", sc.Algorithm, info.Backend)
	}
	if b := desc.Build; b != nil {
		if backend, err = b(w, sc); err != nil {
			return nil, err
		}
		for _, h := range backend.Hosts() {
			targets.Hosts[h.Name] = h
			res.Hosts = append(res.Hosts, Host{Name: h.Name, Role: info.Backend})
		}
		if sb, ok := backend.(ServerBackend); ok {
			targets.Servers = sb.Servers()
		}
	}
	res.Hosts = append(res.Hosts, Host{Name: ResourceHost, Role: "resource"})
	reach := reachOf(sc, backend)

	budget := opt.MaxWork
	if budget <= 0 {
		budget = sc.workLimit()
	}
	w.SetWorkLimit(int64(budget))
	rec := newRecorder(w)
	var firing *faults.Firing
	var setupErr error
	// In a bubble, a backend's clients start goroutines of their own as
	// they connect (go-zookeeper dials at once), and those enter the
	// kernel; from the first connection on, the rest of the setup runs
	// inside the kernel too, so it never races with them.
	setup := func(fn func()) { fn() }
	if w.Bubble() && backend != nil {
		setup = func(fn func()) { w.Notify("setup", fn) }
	}
	setup(func() {
		params := sc.params()
		for _, name := range sc.ClientNames() {
			over := sc.Clients.Each[name]
			var offset time.Duration
			var ppm int64
			if over.Offset != nil {
				offset = over.Offset.D()
			}
			if over.PPM != nil {
				ppm = *over.PPM
			}
			host := w.NewHost(name, sim.NewClock(offset, ppm))
			targets.Clients[name] = host
			targets.Hosts[name] = host
			res.Hosts = append(res.Hosts, Host{Name: name, Role: "client", Offset: offset, PPM: ppm})
			// A user's own lock (Factory) may hold connections of its
			// own (client.Conn, Subscribe), which the direct path's one
			// shared connection would merge: it keeps the wire.
			copts := sim.ClientOptions{Timeout: sc.Clients.Timeout.D(), LibraryRetries: sc.Clients.LibraryRetries, Direct: opt.Direct && opt.Factory == nil}
			if over.LibraryRetries != nil {
				copts.LibraryRetries = *over.LibraryRetries
			}
			var connect func() algorithms.Conns
			connect = func() algorithms.Conns {
				conns := algorithms.Conns{Fresh: connect}
				for _, n := range lockNodes {
					conns.Redis = append(conns.Redis, n.NewClient(host, copts))
				}
				if tokenNode != nil {
					conns.Tokens = tokenNode.NewClient(host, copts)
				}
				return conns
			}
			conns := connect()
			if backend != nil {
				conns.Backend = backend.Connect(host)
			}
			var lock algorithms.Lock
			if opt.Factory != nil {
				lock, err = opt.Factory(sc.clientParams(params, name), conns)
			} else {
				lock, err = algorithms.Build(sc.Algorithm, sc.clientParams(params, name), conns)
			}
			if err != nil {
				setupErr = fmt.Errorf("algorithm %s: %w", sc.Algorithm, err)
				return
			}
			wl := workload{sc: sc, name: name, lock: lock, inv: inv, rec: rec, over: over}
			start := draw(w.Rand(), sc.Clients.Start)
			if over.Start != nil {
				start = draw(w.Rand(), *over.Start)
			}
			p := host.Spawn(name, start, wl.run)
			p.OnExit(func() {
				if p.Crashed() {
					rec.crash(name)
				}
			})
		}
		targets.JumpIgnored, targets.DriftIgnored = ignoredClocks(sc, info, opt, targets)
		firing = faults.ArmWatched(w, targets, sc.Faults, &res.Applied)
	})
	if setupErr != nil {
		return nil, setupErr
	}

	if err := w.Run(sc.Duration.D()); err != nil {
		return nil, fmt.Errorf("scenario %s, seed %d: %w", sc.ID, seed, err)
	}
	res.End = w.Now()
	res.Work = w.Work()
	res.DirectCommands = w.DirectCommands
	res.Stopped = stopOf(w.Cut())
	res.Warnings = firing.Silent(sc.Faults, w.Net)
	res.History = rec.finish(res.End, res.Stopped, inv)
	res.History.Intervals, res.History.Wants = withModes(sc, res.History.Intervals, res.History.Wants)
	if w.Bubble() {
		// Processes that return from the lock's code at one instant
		// record in any order; the history must not show it.
		slices.SortStableFunc(res.History.Intervals, func(a, b checker.Interval) int {
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Client, b.Client))
		})
		slices.SortStableFunc(res.History.Wants, func(a, b checker.Want) int {
			return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Client, b.Client))
		})
	}
	res.Report = checker.Check(res.History, checker.Options{Permits: sc.Clients.Permits, LivenessBound: sc.LivenessBound.D(), MaxHold: sc.MaxHold.D(), Excused: excusedWindows(res.Applied, w.Net.Delays, res.End, reach)})
	res.TraceSHA256 = w.Trace.SHA256()
	res.TraceLines = w.Trace.Len()
	res.Trace = w.Trace.Entries
	res.Events = w.Trace.Events
	res.TraceTruncated, res.TraceKeptBytes = w.Trace.Truncated, w.Trace.KeptBytes
	res.Messages, res.Dropped = w.Net.Sent, w.Net.Dropped
	for i := range res.Hosts {
		if h := targets.Hosts[res.Hosts[i].Name]; h != nil {
			res.Hosts[i].Clock = h.Clock.Jumps()
		}
	}
	if backend != nil {
		res.Metrics = backend.Metrics()
	}
	refused, guarded := 0, false
	for _, spec := range sc.Nodes {
		refused += targets.Nodes[spec.Name].Refused
		guarded = guarded || spec.MinReplicasToWrite > 0
	}
	if guarded {
		res.Metrics = append(res.Metrics, Metric{Name: "writes refused (NOREPLICAS)", Value: int64(refused)})
	}
	return res, nil
}

// Comparison is the outcome of running the same scenario with another
// algorithm.
type Comparison struct {
	Algorithm string          `json:"algorithm"`
	Verdict   checker.Verdict `json:"verdict"`
	Metrics   []Metric        `json:"metrics"`
	Result    *Result         `json:"-"`
}

// RunCompared runs sc, then the same scenario with each algorithm of
// sc.Compare, with the same seed.
func RunCompared(sc *Scenario, seed uint64, opt Options) (*Result, []Comparison, error) {
	res, err := Run(sc, seed, opt)
	if err != nil {
		return nil, nil, err
	}
	var cmp []Comparison
	for _, alg := range sc.Compare {
		// The sink streams the scenario's own record; a comparison's
		// events are not part of it.
		cmpOpt := opt
		cmpOpt.Sink = nil
		r, err := Run(sc.asCompared(alg), seed, cmpOpt)
		if err != nil {
			return nil, nil, fmt.Errorf("compare with %s: %w", alg, err)
		}
		cmp = append(cmp, Comparison{Algorithm: alg, Verdict: r.Report.Verdict, Metrics: r.Metrics, Result: r})
	}
	return res, cmp, nil
}

// workload is one client's life: lock cycles around a read-modify-write of
// the protected resource.
type workload struct {
	sc   *Scenario
	name string
	lock algorithms.Lock
	inv  *sim.Inventory
	rec  *recorder
	over Client
	// ownPolicy: the lock's errors are its own answers (a listed
	// algorithm), not retried by the workload.
	ownPolicy bool
}

func (wl *workload) run(p *sim.Process) {
	kind := wl.sc.Clients.Clock
	if wl.over.Clock != nil {
		kind = *wl.over.Clock
	}
	env := envWithClock(p, kind)
	cycles := wl.sc.Clients.Cycles
	if wl.over.Cycles != nil {
		cycles = *wl.over.Cycles
	}
	work := wl.sc.Clients.Work
	if wl.over.Work != nil {
		work = *wl.over.Work
	}
	w := p.World()
	// A hidden algorithm (a user's own lock under locktest) cannot tell
	// a give-up from an error: see acquire.
	info, _ := algorithms.Lookup(wl.sc.Algorithm)
	wl.ownPolicy = !info.Hidden
	for c := 0; c < cycles; c++ {
		wl.rec.want(wl.name)
		lease := wl.acquire(p, env)
		if lease == nil {
			p.Sleep(draw(w.Rand(), wl.sc.Clients.Think))
			continue
		}
		if v, err := wl.inv.Read(p, lease.Fence); err == nil {
			wl.work(p, env, draw(w.Rand(), work))
			if (wl.sc.Clients.CheckValidity || lease.Lost()) && !lease.Valid(env.Now()) {
				// The client consults its lease and stops acting: its hold
				// ends here, at the check, not at the deadline it passed.
				wl.rec.stop(wl.name, "validity")
				skipped := event.Event{Kind: event.WriteSkipped, Client: wl.name, Token: lease.Token, Fence: lease.Fence}
				if lease.Lost() {
					// A ZooKeeper holder told SUSPENDED or LOST, a watchdog
					// whose renewal failed: no clock ran out, the client
					// learned it.
					skipped.Reason = "lost"
				}
				w.Record(wl.name, skipped)
			} else if !wl.writes() {
				// A reader, or a semaphore's holder: it reads only.
			} else if ok, err := wl.inv.Write(p, v-1, v, lease.Fence); err == nil && !ok {
				w.Record(wl.name, event.Event{Kind: event.WriteRejected, Client: wl.name, Token: lease.Token, Fence: lease.Fence})
			}
		}
		wl.rec.stop(wl.name, "release")
		if err := wl.lock.Release(env, lease); err != nil {
			w.Record(wl.name, event.Event{Kind: event.ReleaseFailed, Client: wl.name, Token: lease.Token, Reason: err.Error()})
		}
		p.Sleep(draw(w.Rand(), wl.sc.Clients.Think))
	}
}

// acquire calls the lock for the cycle and lets it wait, retry and give
// up as it is written to: the workload never retries a give-up, nor waits
// for an error with the lock's own wait policy (issue 31). It returns the
// lease, or nil when the lock's wait policy gave up (ErrNotAcquired: its
// attempts ran out with the lock busy): the cycle then goes without the
// lock and its want ends "gave up", as an application whose lock call
// answered "busy" skips the job, which another worker is doing.
//
// Any other error (a lost reply, a refused connection, READONLY from a
// demoted master) is the lock's answer as well and is recorded as it is,
// but it says nothing of another holder: the application still has the
// job to do and retries it, after its own think time (clients.think), not
// after the lock's wait delay. That retry is a new call of the lock, so a
// lock that retries an error itself (with its delay, backoff or attempts)
// behaves differently from one that reports it; the want stays open across
// the retry, so the stretch counts for liveness as before. A cycle is one
// job: it ends with a hold or a give-up, and errors do not use cycles up.
//
// A hidden algorithm's (a user's own lock under locktest) every error
// comes back as ErrNotAcquired, busy or not: it is retried here after the
// wait delay, as before.
func (wl *workload) acquire(p *sim.Process, env algorithms.Env) *algorithms.Lease {
	w := p.World()
	for {
		call := w.Now()
		l, err := wl.lock.Acquire(env)
		switch {
		case err == nil:
			wl.held(w, call, l)
			return l
		case wl.ownPolicy && errors.Is(err, algorithms.ErrNotAcquired):
			w.Record(wl.name, event.Event{Kind: event.AcquireGaveUp, Client: wl.name, Reason: err.Error()})
			wl.rec.endWant(wl.name, "gave up", w.Now())
			return nil
		case wl.ownPolicy:
			w.Record(wl.name, event.Event{Kind: event.AcquireFailed, Client: wl.name, Reason: err.Error()})
			p.Sleep(draw(w.Rand(), wl.sc.Clients.Think))
		default:
			w.Record(wl.name, event.Event{Kind: event.AcquireFailed, Client: wl.name, Reason: err.Error()})
			p.Sleep(wl.sc.Wait.Delay.D() + draw(w.Rand(), Range{Max: wl.sc.Wait.Jitter.D()}))
		}
	}
}

// held records a hold that began: the interval, and the hooks that end it
// when the lease is lost.
func (wl *workload) held(w *sim.World, call time.Duration, l *algorithms.Lease) {
	wl.rec.acquired(wl.name, call, l)
	name := wl.name
	l.WhenLost(func() {
		w.Record(name, event.Event{Kind: event.HoldLost, Client: name, Token: l.Token, Fence: l.Fence})
		wl.rec.stop(name, "lost")
	})
	l.WhenRenewalFails(func(err error) {
		w.Record(name, event.Event{Kind: event.RenewalFailed, Client: name, Token: l.Token, Reason: err.Error()})
	})
	w.Record(wl.name, holdBegan(wl.name, l))
}

// work is the critical section's work: d, with the nested section of
// clients.reenter after its After (the section then lasts d + Hold).
func (wl *workload) work(p *sim.Process, env algorithms.Env, d time.Duration) {
	re := wl.sc.Clients.Reenter
	if re == nil {
		p.Sleep(d)
		return
	}
	w := p.World()
	after := min(re.After.D(), d)
	p.Sleep(after)
	inner, err := wl.lock.Acquire(env)
	if err != nil {
		w.Record(wl.name, event.Event{Kind: event.AcquireFailed, Client: wl.name, Reason: "nested call: " + err.Error()})
	} else {
		w.Record(wl.name, event.Event{Kind: event.Reentered, Client: wl.name, Resource: inner.Resource, Token: inner.Token})
		p.Sleep(re.Hold.D())
		if err := wl.lock.Release(env, inner); err != nil {
			w.Record(wl.name, event.Event{Kind: event.ReleaseFailed, Client: wl.name, Token: inner.Token, Reason: "nested call: " + err.Error()})
		}
		w.Record(wl.name, event.Event{Kind: event.ReentryReleased, Client: wl.name, Resource: inner.Resource, Token: inner.Token})
	}
	p.Sleep(d - after)
}

// writes reports whether the client writes the resource: readers of a
// reader-writer lock and holders of a semaphore's permits only read it.
func (wl *workload) writes() bool {
	return wl.sc.ModeOf(wl.name) != ModeRead && wl.sc.Clients.Permits <= 1
}

// withModes marks each hold and want with its client's declared mode, so
// the checker knows a reader's hold from a writer's.
func withModes(sc *Scenario, iv []checker.Interval, wants []checker.Want) ([]checker.Interval, []checker.Want) {
	for i := range iv {
		iv[i].Mode = sc.ModeOf(iv[i].Client)
	}
	for i := range wants {
		wants[i].Mode = sc.ModeOf(wants[i].Client)
	}
	return iv, wants
}

// ignoredClocks names the hosts whose clock a clock-jump (a drift) sets
// without effect, and why, so that such a fault is warned about.
//   - A client that says clients.clock: monotonic times its lease with
//     Go's time.Since, which a step of the wall clock does not move; its
//     ZooKeeper session, if any, is timed the same way. (A client left at
//     the default is warned about when the file is read: the default
//     changed.) Real-client algorithms in a bubble read the clock their
//     own way and are left out.
//   - ZooKeeper times sessions with System.nanoTime (a monotonic clock):
//     a step of a server's wall clock moves nothing, and the simulated
//     ensemble (zookeeper-ensemble) keeps no per-server clock at all, so
//     its servers ignore drift too.
func ignoredClocks(sc *Scenario, info algorithms.Info, opt Options, t faults.Targets) (jump, drift map[string]string) {
	jump, drift = map[string]string{}, map[string]string{}
	if !info.Bubble && opt.Factory == nil {
		for _, name := range sc.ClientNames() {
			kind := sc.Clients.Clock
			if c := sc.Clients.Each[name].Clock; c != nil {
				kind = *c
			}
			if kind == ClockMonotonic {
				jump[name] = name + " times its lease with the monotonic clock (clock: monotonic), which a step of the wall clock does not move"
			}
		}
	}
	if ignored := backendOf(info).ClockIgnored; ignored != nil {
		for name := range t.Servers {
			jump[name], drift[name] = ignored(name)
		}
	}
	return jump, drift
}

// holdBegan records a hold: its token (a lock whose library keeps the
// token to itself, as go-zookeeper's zk.Lock does, has none), its fencing
// token, and when it ends — a Redis lease at a time on the client's clock
// (Validity), a ZooKeeper lease when its session is lost (no Validity).
func holdBegan(client string, l *algorithms.Lease) event.Event {
	e := event.Event{Kind: event.HoldBegan, Client: client, Resource: l.Resource, Token: l.Token, Fence: l.Fence}
	if l.HasDeadline() {
		e.Validity = l.Validity.Sub(sim.Epoch)
	}
	return e
}

// recorder builds the history as the run goes.
type recorder struct {
	w         *sim.World
	intervals []*openInterval
	holding   map[string]*openInterval
	wants     []checker.Want
	wanting   map[string]int // index into wants
}

type openInterval struct {
	checker.Interval
	ended bool
}

func newRecorder(w *sim.World) *recorder {
	return &recorder{w: w, holding: map[string]*openInterval{}, wanting: map[string]int{}}
}

func (r *recorder) want(client string) {
	r.wants = append(r.wants, checker.Want{Client: client, From: r.w.Now(), To: -1})
	r.wanting[client] = len(r.wants) - 1
}

func (r *recorder) endWant(client, outcome string, at time.Duration) {
	if i, ok := r.wanting[client]; ok {
		r.wants[i].To = at
		r.wants[i].Outcome = outcome
		delete(r.wanting, client)
	}
}

func (r *recorder) acquired(client string, call time.Duration, l *algorithms.Lease) {
	now := r.w.Now()
	r.endWant(client, "acquired", now)
	iv := &openInterval{
		Interval: checker.Interval{Client: client, AcquireCall: call, Start: now, Token: l.Token, Fence: l.Fence},
	}
	r.intervals = append(r.intervals, iv)
	r.holding[client] = iv
}

func (r *recorder) stop(client, reason string) {
	if iv, ok := r.holding[client]; ok {
		iv.End, iv.EndReason, iv.ended = r.w.Now(), reason, true
		delete(r.holding, client)
	}
}

func (r *recorder) crash(client string) {
	r.stop(client, "crash")
	r.endWant(client, "crash", r.w.Now())
}

// finish closes what is still open at the end of the run. A hold is not
// cut at the lease's validity deadline: a client that never consults its
// deadline goes on acting as holder (Kleppmann's paused client), so it
// holds until it releases, crashes, learns it lost the lock, or checks its
// lease and stops (recorded by the workload as it happens). A run a limit
// cut short closes them at the cut, saying so (stopped != nil).
func (r *recorder) finish(end time.Duration, stopped *Stop, inv *sim.Inventory) checker.History {
	h := checker.History{End: end, Initial: inv.Initial, Accesses: inv.Log, Fenced: inv.Rule != sim.FenceNone}
	reason := "end of run"
	if stopped != nil {
		reason = CutShort
	}
	for _, iv := range r.intervals {
		if !iv.ended {
			iv.End, iv.EndReason = end, reason
		}
		h.Intervals = append(h.Intervals, iv.Interval)
	}
	for _, wt := range r.wants {
		if wt.To < 0 {
			wt.To, wt.Outcome = end, reason
		}
		h.Wants = append(h.Wants, wt)
	}
	return h
}
