// Package runner runs a scenario: it builds the simulated world from the
// file (nodes, the backend's servers, the clients and their locks, the
// protected resource), arms the faults, drives each client's workload,
// records the history and judges it (Run). It is a room of its own
// (docs/architecture.md, "Rooms and what they may import") so that the
// file format and the catalogue (package scenarios) stay readable
// without the machinery that runs them, and so that what consumes runs
// (explore, matrix, locktest, reports, the command) imports the runner
// by name.
package runner

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
)

// Run executes the scenario with the given seed and checks the history.
func Run(sc *scenarios.Scenario, seed uint64, opt Options) (*Result, error) {
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
		targets.Spared = map[string]bool{scenarios.ResourceHost: true}
	}

	lockNodes, tokenNode := buildRedisNodes(w, sc, opt, res, &targets)
	rule := sim.FenceRule(sc.Resource.TokenCheck)
	inv := w.NewInventory(scenarios.ResourceHost, sc.Resource.Initial, rule)
	targets.Hosts[scenarios.ResourceHost] = inv.Host

	backend, err := buildBackend(w, sc, info, res, &targets)
	if err != nil {
		return nil, err
	}
	res.Hosts = append(res.Hosts, Host{Name: scenarios.ResourceHost, Role: "resource"})
	reach := reachOf(sc, backend)

	budget := opt.MaxWork
	if budget <= 0 {
		budget = sc.WorkLimit()
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
		rw := runWorld{w: w, sc: sc, opt: opt, res: res, targets: &targets, lockNodes: lockNodes, tokenNode: tokenNode, backend: backend, inv: inv, rec: rec}
		for _, name := range sc.ClientNames() {
			if setupErr = rw.spawnClient(name); setupErr != nil {
				return
			}
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
	res.collect(w, rec, inv, targets, backend, firing, reach)
	return res, nil
}

// runWorld is one run's world as Run builds it, for spawning its clients.
type runWorld struct {
	w         *sim.World
	sc        *scenarios.Scenario
	opt       Options
	res       *Result
	targets   *faults.Targets
	lockNodes []*sim.RedisNode
	tokenNode *sim.RedisNode
	backend   Backend
	inv       *sim.Inventory
	rec       *recorder
}

// spawnClient makes client name's host, its connections and its lock, and
// spawns its workload at its drawn start.
func (rw *runWorld) spawnClient(name string) error {
	w, sc, opt, res, targets := rw.w, rw.sc, rw.opt, rw.res, rw.targets
	lockNodes, tokenNode, backend, inv, rec := rw.lockNodes, rw.tokenNode, rw.backend, rw.inv, rw.rec
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
	var err error
	if opt.Factory != nil {
		lock, err = opt.Factory(sc.LockParams(name), conns)
	} else {
		lock, err = algorithms.Build(sc.Algorithm, sc.LockParams(name), conns)
	}
	if err != nil {
		return fmt.Errorf("algorithm %s: %w", sc.Algorithm, err)
	}
	wl := workload{sc: sc, name: name, lock: lock, inv: inv, rec: rec, over: over}
	start := scenarios.Draw(w.Rand(), sc.Clients.Start)
	if over.Start != nil {
		start = scenarios.Draw(w.Rand(), *over.Start)
	}
	p := host.Spawn(name, start, wl.run)
	p.OnExit(func() {
		if p.Crashed() {
			rec.crash(name)
		}
	})
	return nil
}

// buildRedisNodes builds the file's Redis nodes in w (lock nodes, the
// fencing token node, replicas and their replication), seeds the fencing
// counter from params.fence_start, and names them as fault targets and
// hosts of res.
func buildRedisNodes(w *sim.World, sc *scenarios.Scenario, opt Options, res *Result, targets *faults.Targets) (lockNodes []*sim.RedisNode, tokenNode *sim.RedisNode) {
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
	// Pre-existing history of the fencing counter (algorithms.FenceSeed);
	// replicas get it from their initial synchronisation below.
	if args, ok := algorithms.FenceSeed(sc.Key, sc.Params); ok {
		if n, ok := algorithms.FenceCounter(tokenNode, lockNodes); ok {
			n.Apply(args...)
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
	return lockNodes, tokenNode
}

// buildBackend builds the servers of the algorithm's backend in w (its
// descriptor's Build; none for Redis) and names them as fault targets and
// hosts of res.
func buildBackend(w *sim.World, sc *scenarios.Scenario, info algorithms.Info, res *Result, targets *faults.Targets) (Backend, error) {
	var backend Backend
	var err error
	desc, ok := LookupBackend(info.Backend)
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
	return backend, nil
}

// collect fills res from the world after the run: the history and its
// verdict, the trace, the hosts' clocks and the backend's metrics.
func (res *Result) collect(w *sim.World, rec *recorder, inv *sim.Inventory, targets faults.Targets, backend Backend, firing *faults.Firing, reach lockReach) {
	sc := res.Scenario
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
func RunCompared(sc *scenarios.Scenario, seed uint64, opt Options) (*Result, []Comparison, error) {
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
		r, err := Run(sc.AsCompared(alg), seed, cmpOpt)
		if err != nil {
			return nil, nil, fmt.Errorf("compare with %s: %w", alg, err)
		}
		cmp = append(cmp, Comparison{Algorithm: alg, Verdict: r.Report.Verdict, Metrics: r.Metrics, Result: r})
	}
	return res, cmp, nil
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
func ignoredClocks(sc *scenarios.Scenario, info algorithms.Info, opt Options, t faults.Targets) (jump, drift map[string]string) {
	jump, drift = map[string]string{}, map[string]string{}
	if !info.Bubble && opt.Factory == nil {
		for _, name := range sc.ClientNames() {
			kind := sc.Clients.Clock
			if c := sc.Clients.Each[name].Clock; c != nil {
				kind = *c
			}
			if kind == scenarios.ClockMonotonic {
				jump[name] = name + " times its lease with the monotonic clock (clock: monotonic), which a step of the wall clock does not move"
			}
		}
	}
	desc, _ := LookupBackend(info.Backend)
	if ignored := desc.ClockIgnored; ignored != nil {
		for name := range t.Servers {
			jump[name], drift[name] = ignored(name)
		}
	}
	return jump, drift
}
