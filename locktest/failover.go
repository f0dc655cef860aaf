package locktest

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// Failover is the class of Sentinel failovers: a master dies before its
// last writes reached its replica, and the replica is promoted; clients
// that reconnect reach it. It needs Options.Replicas.
const Failover Class = "failover"

// failoverRun draws run i of the failover class: a master crashes for good
// while clients are busy, and its first replica is promoted a little later.
func failoverRun(base *scenarios.Scenario, opt Options, seed uint64, i int) *scenarios.Scenario {
	h := fnv.New64a()
	fmt.Fprintf(h, "locktest/failover/%d", seed)
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(i)))
	sc := base.Clone()
	sc.ID = fmt.Sprintf("locktest-failover-%d-%d", seed, i)
	if !opt.keepWorkload() {
		sc.Clients.Count = 2 + rng.IntN(4)
		ttl := opt.TTL
		hi := time.Duration(float64(ttl) * (0.05 + 0.8*rng.Float64())).Round(time.Millisecond)
		sc.Clients.Work, _ = scenarios.ParseRange(fmt.Sprintf("%v..%v", hi/2, hi))
	}
	master := string(rune('A' + rng.IntN(opt.Nodes)))
	crash := time.Duration(100+rng.IntN(2900)) * time.Millisecond
	promote := crash + time.Duration(rng.IntN(1000))*time.Millisecond
	at := func(d time.Duration) *faults.Duration { v := faults.Duration(d); return &v }
	sc.Faults = faults.Schedule{
		{Kind: faults.NodeCrash, Target: master, At: at(crash)},
		{Kind: faults.Failover, Target: master + "1", At: at(promote)},
	}
	sc.Seed = rng.Uint64()>>1 | 1
	return sc
}

// Stall is the class of a starved renewal and a late release: one client's
// releases and renewals are held back by up to twice the TTL, a few at a
// time, while its other traffic and its worker go on: Redisson's watchdog
// starved while the worker runs, the opposite of a hang. Both kinds of
// release are held back: scripts (EVALSHA and EVAL — the renewals of
// redsync's Extend, redislock's Refresh, a watchdog's compare-and-pexpire,
// a compare-and-delete release) and the plain commands a lock without an
// owner check sends (DEL, UNLINK, PEXPIRE, EXPIRE). A plain DEL that
// arrives after the lease expired deletes the next holder's key; a
// compare-and-delete arriving as late deletes nothing.
const Stall Class = "stall"

// stalledOps are the commands the stall class holds back: the scripts
// first (the draws of earlier versions stay the same faults), then the
// plain releases and renewals.
var stalledOps = []string{"EVALSHA", "EVAL", "DEL", "UNLINK", "PEXPIRE", "EXPIRE"}

// stallRun draws run i of the stall class.
func stallRun(base *scenarios.Scenario, opt Options, seed uint64, i int) *scenarios.Scenario {
	h := fnv.New64a()
	fmt.Fprintf(h, "locktest/stall/%d", seed)
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(i)))
	sc := base.Clone()
	sc.ID = fmt.Sprintf("locktest-stall-%d-%d", seed, i)
	if !opt.keepWorkload() {
		sc.Clients.Count = 2 + rng.IntN(4)
		hi := time.Duration(float64(opt.TTL) * (0.05 + 0.8*rng.Float64())).Round(time.Millisecond)
		if opt.Renews {
			hi = time.Duration(float64(opt.TTL) * (0.5 + 1.5*rng.Float64())).Round(time.Millisecond)
		}
		sc.Clients.Work, _ = scenarios.ParseRange(fmt.Sprintf("%v..%v", hi/2, hi))
	}
	client := fmt.Sprintf("c%d", 1+rng.IntN(sc.Clients.Count))
	start := time.Duration(rng.IntN(3000)) * time.Millisecond
	by := time.Duration(float64(opt.TTL) * (0.3 + 1.7*rng.Float64())).Round(time.Millisecond)
	n := 1 + rng.IntN(4)
	at := func(d time.Duration) *faults.Duration { v := faults.Duration(d); return &v }
	for _, op := range stalledOps {
		sc.Faults = append(sc.Faults, faults.Fault{Kind: faults.Delay, At: at(start), Dir: "request", Client: client, Op: op, Count: n, Duration: faults.Duration(by)})
	}
	sc.Seed = rng.Uint64()>>1 | 1
	return sc
}

// exploreDrawn is explore.Explore for a class the fault generator does
// not draw (failover, stall): runs one by one, the first violation shrunk.
func exploreDrawn(draw func(base *scenarios.Scenario, opt Options, seed uint64, i int) *scenarios.Scenario, f builder, opt Options, base *scenarios.Scenario, prepare func(uint64)) (*explore.Result, error) {
	defer runner.BeginSweep()()
	runOpt := runner.Options{Factory: f.algorithm(opt.TTL, opt.Renews, opt.Fencing), Bubble: true, NoTrace: true, Prepare: prepare}
	out := &explore.Result{}
	for i := 1; i <= opt.Runs; i++ {
		sc := draw(base, opt, opt.Seed, i)
		res, err := runner.Run(sc, sc.Seed, runOpt)
		out.Runs++
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", i, err)
		}
		prop := violated(res.Report.Verdict)
		if prop == Safe {
			continue
		}
		name := "liveness"
		switch {
		case prop&MutualExclusion != 0:
			name = "mutual_exclusion"
		case prop&Resource != 0:
			name = "resource"
		}
		fd := explore.Finding{Run: i, Property: name, Scenario: sc, Result: res}
		fd.Minimal, fd.MinimalResult, fd.ShrinkRuns = explore.Shrink(sc, name, explore.ShrinkOptions{
			Factory: runOpt.Factory, MaxRuns: opt.ShrinkRuns, Bubble: true, Prepare: prepare,
		})
		out.Findings = append(out.Findings, fd)
		break
	}
	return out, nil
}
