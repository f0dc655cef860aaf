package matrix

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// The matrix's setup: each row's base scenario (from the backend's
// descriptor), the rows, the hosts a schedule may act on, and one run of a
// cell.

// Base builds the base scenario the matrix runs for an algorithm:
// 3 clients with 2 lock cycles each, work 100ms..1.5s, TTL 2s, 20s of
// simulated time and no faults. Redis algorithms get as many nodes as they
// need (A, B, ...), five for quorum algorithms; other backends get one
// unused Redis node and bring their own hosts. The resource checks fencing
// tokens (">") when the algorithm hands them out, which a fault-free probe
// run finds out.
//
// A row named "ALGORITHM+fencing" is the algorithm with fencing tokens: from
// INCR on a separate node T (which faults leave alone) for Redis locks, from
// the fence row's version for Postgres advisory locks, and a resource that
// checks them (">"). (The queue, reentrant, semaphore and reader-writer
// ZooKeeper recipes' leases carry their znode's sequence, Info.Fencing
// "built in"; gozk-lock and gozk-simple hand out none. The gozk-* recipes
// are tabled by their own test.)
func Base(algorithm string) (*scenarios.Scenario, error) {
	name, fenced := strings.CutSuffix(algorithm, "+fencing")
	info, err := algorithms.Lookup(name)
	backend := runtimeOf(info)
	if err != nil || (fenced && backend.MatrixFencing == nil) {
		return nil, fmt.Errorf("unknown algorithm %q; expected one of %s", algorithm, strings.Join(Rows(), ", "))
	}
	if fenced {
		sc := newMatrixScenario(info, ">")
		sc.ID = "matrix-" + algorithm
		if sc.Params == nil {
			sc.Params = map[string]string{}
		}
		backend.MatrixFencing(sc)
		return sc, sc.Validate()
	}
	sc := newMatrixScenario(info, "none")
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if issuesFencingTokens(sc) {
		sc = newMatrixScenario(info, ">")
		if err := sc.Validate(); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

func newMatrixScenario(info algorithms.Info, fencing string) *scenarios.Scenario {
	backend := runtimeOf(info)
	nodes := 1
	var params map[string]string
	if backend.Matrix != nil {
		nodes, params = backend.Matrix(info, TTL)
	}
	sc := &scenarios.Scenario{
		ID:        "matrix-" + info.Name,
		Title:     info.Name + " under random faults (locklab matrix)",
		Algorithm: info.Name,
		TTL:       scenarios.Duration(TTL),
		Clients:   scenarios.Clients{Count: 3, Cycles: 2, Work: scenarios.ExplicitRange(100*time.Millisecond, 1500*time.Millisecond), Start: scenarios.ExplicitRange(0, 0)},
		Resource:  scenarios.Resource{TokenCheck: fencing},
		// Clients start together: contention at the start splits quorum
		// votes, which is what many Redlock failures need.
		Duration: scenarios.Duration(Duration),
		Params:   params,
	}
	for i := range nodes {
		sc.Nodes = append(sc.Nodes, scenarios.Node{Name: nodeName(i)})
	}
	if info.Name != algorithms.Custom && !backend.OwnWait {
		// A waiter that finds the lock held tries again after TTL/8 (plus
		// up to TTL/16), not every 100–150ms: polling a held key is the
		// workload's cost, not the lock's. Measured against the fixed
		// 100ms and against exponential backoff (wait.backoff), this
		// finds every classic failure in less CPU, Redlock's
		// crash-restart included, which needs a waiter to ask a
		// restarted node while the holder still holds: backoff asked too
		// rarely for that. A user's own lock (locktest) and the ZooKeeper
		// recipes wait their own way and never read the policy: their
		// files keep the default.
		sc.Wait = scenarios.Wait{Delay: scenarios.Duration(WaitDelay), Jitter: scenarios.Duration(WaitJitter)}
	}
	sc.ApplyDefaults()
	// A semaphore is put under the faults with two permits for three
	// clients, a reader-writer lock with two readers and a writer: as a
	// mutex (one permit, all writers) neither would show what it adds.
	// Explore's draws and shrinking keep both (scenarios/modes_explore.go).
	switch info.Primitive {
	case algorithms.PrimitiveSemaphore:
		sc.Clients.Permits = 2
	case algorithms.PrimitiveReadWrite:
		scenarios.WithModeCycle(sc, []string{scenarios.ModeRead, scenarios.ModeRead, scenarios.ModeWrite})
	}
	return sc
}

// nodeName is A, B, ..., Z, A2, B2, ...
func nodeName(i int) string {
	s := string(rune('A' + i%26))
	if i >= 26 {
		s += fmt.Sprint(i/26 + 1)
	}
	return s
}

// issuesFencingTokens runs the scenario once without faults and reports
// whether any lease carried a fencing token.
func issuesFencingTokens(sc *scenarios.Scenario) bool {
	res, err := safeRun(sc, 1)
	if err != nil {
		return false
	}
	for _, iv := range res.History.Intervals {
		if iv.FencingToken != 0 {
			return true
		}
	}
	return false
}

// Rows are the matrix's rows by default: every algorithm, then the
// fenced variants of those that can carry fencing tokens, so the table shows
// what fencing buys.
//
// Algorithms that run real client code in the bubble runtime (the gozk-*
// ZooKeeper recipes on go-zookeeper) are not rows: their faults are
// tabled by their own test (the go-zookeeper × fault table). The Postgres
// advisory locks (pgx in the bubble) are: their runs are short.
func Rows() []string {
	var rows []string
	for _, a := range algorithms.Names() {
		if info, err := algorithms.Lookup(a); err == nil && (!info.Bubble || runtimeOf(info).MatrixBubbleRows) {
			rows = append(rows, a)
		}
	}
	for _, a := range []string{"set-nx-px-lua", "redlock", "pg-advisory-session"} {
		if _, err := algorithms.Lookup(a); err == nil {
			rows = append(rows, a+"+fencing")
		}
	}
	return rows
}

// GeneratorNames are the hosts a matrix schedule may act on: clients, lock
// nodes and the backend's own hosts — not the protected resource, whose
// faults say nothing about the lock.
func GeneratorNames(sc *scenarios.Scenario) faults.Names {
	all := sc.Names()
	n := faults.Names{Clients: all.Clients}
	if info, err := algorithms.Lookup(sc.Algorithm); err == nil && !backendOf(info).RedisNodes {
		for _, h := range all.Others {
			if h != scenarios.ResourceHost {
				n.Others = append(n.Others, h)
			}
		}
		n.Servers = all.Servers // a backend's servers a restart may crash (zk1…zkN)
		return n
	}
	for _, node := range sc.Nodes {
		if node.Role == "" {
			n.Nodes = append(n.Nodes, node.Name) // not the fencing-token node
		}
	}
	return n
}

// withDefaults checks the options and fills in their defaults: every
// fault class, the default rows, a worker per CPU.
func (opt *Options) withDefaults() error {
	if opt.Seeds < 0 {
		return fmt.Errorf("seeds: expected a number of runs per cell >= 1, got %d", opt.Seeds)
	}
	if opt.Seeds == 0 {
		opt.Seeds = DefaultSeeds
	}
	if len(opt.Classes) == 0 {
		opt.Classes = faults.Classes()
	}
	for _, c := range opt.Classes {
		if !slices.Contains(faults.Classes(), c) {
			var names []string
			for _, k := range faults.Classes() {
				names = append(names, string(k))
			}
			return fmt.Errorf("unknown fault class %q; expected one of %s", c, strings.Join(names, ", "))
		}
	}
	if len(opt.Algorithms) == 0 {
		opt.Algorithms = Rows()
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.NumCPU()
	}
	return nil
}

// matrixBases builds each row's base scenario (Base) and records
// its setup in res; a row whose setup is invalid gets a stand-in base and
// its error, which every run of the row reports.
func matrixBases(res *Result, algs []string) ([]*scenarios.Scenario, []error, error) {
	bases := make([]*scenarios.Scenario, len(algs))
	baseErrs := make([]error, len(algs))
	for i, a := range algs {
		if _, err := algorithms.Lookup(strings.TrimSuffix(a, "+fencing")); err != nil {
			return nil, nil, fmt.Errorf("unknown algorithm %q; expected one of %s", a, strings.Join(Rows(), ", "))
		}
		bases[i], baseErrs[i] = Base(a)
		if bases[i] == nil {
			// The setup itself is invalid for this algorithm: every run of
			// its row is an error, shown in the cells.
			info, _ := algorithms.Lookup(a)
			bases[i] = newMatrixScenario(info, "none")
		}
		b := bases[i]
		info, _ := algorithms.Lookup(a)
		res.Setups = append(res.Setups, Setup{
			Algorithm: a, Backend: info.Backend, Nodes: b.NodeNames(), Fencing: b.Resource.TokenCheck,
			TTL: b.TTL, Clients: b.Clients.Count, Cycles: b.Clients.Cycles, Work: b.Clients.Work,
			Duration: b.Duration, Horizon: scenarios.Duration(Horizon),
		})
	}
	return bases, baseErrs, nil
}

// matrixRun is run index of a cell of class on its row's base scenario.
func matrixRun(base *scenarios.Scenario, baseErr error, class faults.Class, index int) matrixOutcome {
	if baseErr != nil {
		return matrixOutcome{err: baseErr}
	}
	sched := Schedule(base, class, index)
	sc := base.Clone() // a fresh copy: runs share no maps or slices
	sc.Faults = sched
	sc.Seed = uint64(index)
	out := matrixOutcome{schedule: sched}
	if err := sc.Validate(); err != nil {
		out.err = err
	} else if r, err := safeRun(sc, uint64(index)); err != nil {
		out.err = err
	} else {
		out.verdict = r.Report.Verdict
	}
	return out
}

// backendOf is the descriptor of info's backend (the zero one if none is
// registered under its name).
func backendOf(info algorithms.Info) scenarios.BackendInfo {
	b, _ := scenarios.LookupBackend(info.Backend)
	return b
}

// runtimeOf is the runtime descriptor of info's backend: its matrix setup
// (the zero one if none is registered under its name).
func runtimeOf(info algorithms.Info) runner.BackendInfo {
	b, _ := runner.LookupBackend(info.Backend)
	return b
}
