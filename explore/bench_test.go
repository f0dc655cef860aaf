package explore

import (
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"

	"github.com/locklab/locklab/algorithms"
)

// BenchmarkExploreRuns measures exploration throughput on the issue's
// yardstick: Redlock on 5 nodes, 5 clients, 10 simulated seconds, a random
// schedule from every fault class per run. Run with -cpu 1 for one core
// (one worker) and without for all cores. "direct" is what explore runs
// (Options.Direct); "wire" is the same runs through go-redis's RESP.
func BenchmarkExploreRuns(b *testing.B) {
	b.Run("direct", func(b *testing.B) { benchExploreRuns(b, true) })
	b.Run("wire", func(b *testing.B) { benchExploreRuns(b, false) })
}

func benchExploreRuns(b *testing.B, direct bool) {
	base, err := matrix.Base("redlock")
	if err != nil {
		b.Fatal(err)
	}
	base.Clients.Count = 5
	base.Clients.Cycles = 3
	base.Duration = scenarios.Duration(10 * time.Second)
	classes := faults.Classes()
	var simulated time.Duration
	var commands, messages int
	// The collector's setting explore runs under (BeginSweep): this
	// measures what explore does.
	defer runner.BeginSweep()()
	start := time.Now()
	b.ResetTimer()
	var mu sync.Mutex
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			sc := base.Clone()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			sc.Faults = faults.Generate(rng, classes, matrix.GeneratorNames(sc), matrix.Horizon, sc.TTL.D())
			res, err := runner.Run(sc, uint64(i), runner.Options{NoTrace: true, Direct: direct})
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			simulated += res.End
			commands += res.DirectCommands
			messages += res.Messages
			mu.Unlock()
		}
	})
	wall := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/wall, "runs/s")
	b.ReportMetric(simulated.Seconds()/wall, "sim-s/s")
	// Commands per run (counted on the direct path only: the wire path
	// does not count them) and messages per run (requests, replies and
	// the resource's traffic) are what a run costs, whatever the load.
	if direct {
		b.ReportMetric(float64(commands)/float64(b.N), "commands/run")
	}
	b.ReportMetric(float64(messages)/float64(b.N), "messages/run")
}

// BenchmarkTimeToFind reports, for each classic failure, the median over 20
// seeds of the wall time random exploration alone needs to find it, and to
// find and shrink it, on one worker. Run with -benchtime 1x.
func BenchmarkTimeToFind(b *testing.B) {
	cases := []struct {
		name, alg string
		class     faults.Class
	}{
		{"redlock-clock-jump", "redlock", faults.ClassClock},
		{"redlock-crash-restart", "redlock", faults.ClassRestart},
		{"del-wrong-client", "set-nx-px-del", faults.ClassPause},
		{"gc-pause-beyond-ttl", "set-nx-px-lua", faults.ClassPause},
		{"setnx-expire-crash", "setnx-expire", faults.ClassCrash},
		{"zk-session-expiry-pause", "gozk-queue", faults.ClassPause},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if info, _ := algorithms.Lookup(c.alg); info.Bubble {
				// A testing/synctest bubble needs a *testing.T to host
				// it (bubblehost.Bind); a benchmark has none.
				b.Skipf("%s runs real client code in a synctest bubble, which a benchmark cannot host; TestExploreCatchesUnsafeAlgorithms explores it", c.alg)
			}
			for n := 0; n < b.N; n++ {
				var find, total, cpuFind, cpuTotal, runsToFind []float64
				missed := 0
				for seed := uint64(1); seed <= 20; seed++ {
					// Explore, then Shrink, as Explore does when it
					// shrinks: the CPU time of each, taken apart, is
					// what a loaded machine does not inflate.
					t0, c0 := time.Now(), processCPU()
					res, err := Explore(Options{Algorithm: c.alg, Classes: []faults.Class{c.class}, Seed: seed, Runs: 5000, Workers: 1, NoShrink: true})
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Findings) == 0 {
						missed++
						continue
					}
					c1 := processCPU()
					f := res.Findings[0]
					Shrink(f.Scenario, f.Property, ShrinkOptions{})
					// The index of the first violating run: how rare the
					// failure is among the drawn runs, apart from what a
					// run costs.
					runsToFind = append(runsToFind, float64(f.Run))
					find = append(find, res.FoundAfter.Seconds())
					total = append(total, time.Since(t0).Seconds())
					cpuFind = append(cpuFind, (c1 - c0).Seconds())
					cpuTotal = append(cpuTotal, (processCPU() - c0).Seconds())
				}
				b.ReportMetric(median(find), "s-to-find")
				b.ReportMetric(median(total), "s-to-find-and-shrink")
				b.ReportMetric(median(cpuFind), "cpu-s-to-find")
				b.ReportMetric(median(cpuTotal), "cpu-s-to-find-and-shrink")
				b.ReportMetric(median(runsToFind), "runs-to-find")
				b.ReportMetric(float64(missed), "seeds-missed")
			}
		})
	}
}

// processCPU is the CPU time (user and system) the test process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkFindingRate is what exploration buys: violating runs per CPU
// second, for each classic failure, under the matrix's wait policy and
// the ones it was measured against (issue 24: the default 100ms + 50ms,
// and exponential backoff capped at 500ms and 1s). Each sub-benchmark
// sweeps fixed runs with one worker, without shrinking, and counts every
// violating run: a rate over many runs, much less noisy than the median
// index of a first finding. Heavy (the crash-restart rows run 40,000
// runs); pick rows with -bench, run with -benchtime 1x -cpu 1.
func BenchmarkFindingRate(b *testing.B) {
	ms := scenarios.Duration(time.Millisecond)
	policies := []struct {
		name string
		wait *scenarios.Wait // nil: the matrix's own
	}{
		{"matrix", nil},
		{"wait-100ms", &scenarios.Wait{Delay: 100 * ms, Jitter: 50 * ms}},
		{"wait-500ms", &scenarios.Wait{Delay: 500 * ms, Jitter: 250 * ms}}, // TTL/4 + TTL/8
		{"exponential-500ms", &scenarios.Wait{Delay: 100 * ms, Jitter: 50 * ms, Backoff: algorithms.BackoffExponential, Max: 500 * ms}},
		{"exponential-1s", &scenarios.Wait{Delay: 100 * ms, Jitter: 50 * ms, Backoff: algorithms.BackoffExponential, Max: 1000 * ms}},
	}
	cases := []struct {
		name, alg string
		class     faults.Class
		runs      int
		seeds     []uint64
	}{
		{"redlock-clock-jump", "redlock", faults.ClassClock, 2000, []uint64{1, 2}},
		{"redlock-crash-restart", "redlock", faults.ClassRestart, 20000, []uint64{1, 2}},
		{"del-wrong-client", "set-nx-px-del", faults.ClassPause, 1000, []uint64{1}},
		{"gc-pause-beyond-ttl", "set-nx-px-lua", faults.ClassPause, 1000, []uint64{1}},
		{"setnx-expire-crash", "setnx-expire", faults.ClassCrash, 1000, []uint64{1}},
	}
	for _, c := range cases {
		for _, p := range policies {
			b.Run(c.name+"/"+p.name, func(b *testing.B) {
				base, err := matrix.Base(c.alg)
				if err != nil {
					b.Fatal(err)
				}
				if p.wait != nil {
					base.Wait = *p.wait
				}
				for n := 0; n < b.N; n++ {
					found, runs := 0, 0
					c0 := processCPU()
					for _, seed := range c.seeds {
						res, err := Explore(Options{Algorithm: c.alg, Base: base, Classes: []faults.Class{c.class}, Seed: seed, Runs: c.runs, Workers: 1, All: true, NoShrink: true, MaxFindings: c.runs})
						if err != nil {
							b.Fatal(err)
						}
						found += len(res.Findings) + res.MoreFindings
						runs += res.Runs
					}
					cpu := (processCPU() - c0).Seconds()
					b.ReportMetric(float64(found), "findings")
					b.ReportMetric(float64(runs), "runs")
					b.ReportMetric(cpu*1000/float64(runs), "cpu-ms/run")
					b.ReportMetric(float64(found)/cpu, "findings/cpu-s")
				}
			})
		}
	}
}
