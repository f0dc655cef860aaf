package locktest

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkTimeToFind measures, for the classic failure of each primitive
// on the bubble path, the run at which locktest first finds it over seeds
// 1 to 20 and what a run costs: the figures the default number of runs per
// class (defaultRuns) is chosen from. Each sub-benchmark explores its one
// class through the public entry point (Run, RunSemaphore, RunReadWrite,
// RunPostgres, RunZooKeeper) with up to LOCKLAB_TTF_LIMIT runs per seed,
// expected Any and shrunk by one run. The run indices follow from the
// seeds alone, so load does not change them; cpu-ms/run is the process's
// CPU over every run the sweep made: the runs explored and, per finding,
// the one shrink run and the two traced runs of the counterexample
// (Shrink's and the class's). One iteration is the whole sweep:
//
//	go test ./locktest -run XXX -bench TimeToFind -benchtime 1x -cpu 1
//
// LOCKLAB_TTF_LIMIT=N explores up to N runs per seed (default 500). The
// figures are in BENCHMARKS.md ("Time to find on the bubble path").
func BenchmarkTimeToFind(b *testing.B) {
	limit := 500
	if v := os.Getenv("LOCKLAB_TTF_LIMIT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("LOCKLAB_TTF_LIMIT=%q: want a positive number of runs", v)
		}
		limit = n
	}
	for _, c := range ttfCases() {
		b.Run(c.name, func(b *testing.B) {
			var s ttfSweep
			for range b.N {
				s = sweepSeeds(b, c, limit)
			}
			s.report(b, limit)
		})
	}
}

// ttfCase is one primitive's classic failure: the lock, its class, and
// the options the user's test would pass.
type ttfCase struct {
	name  string
	class Class
	opt   Options
	run   func(t *testing.T, opt Options)
}

// ttfCases are the classic failures: a lease released with a plain DEL
// deletes the next holder's key when its release is held back (the stall
// class); a single-instance Redis lease (bsm/redislock) breaks when its holder pauses past the TTL, the node's
// clock jumps or the node restarts without its keys; Redlock (redsync, 5
// pools) under a node's clock jump and restart (docs/faults.md); a
// two-permit semaphore and a reader-writer lock on Redis under a pause and
// a restart; a pgx session lock on a pinned connection when the database
// restarts (the session, and its lock, end while the holder works); and
// go-zookeeper's zk.NewLock when a holder pauses past its session, hunted
// as TestRunZooKeeperFindsPausedHolder does.
func ttfCases() []ttfCase {
	redis2s := Options{TTL: 2 * time.Second}
	redlock5 := Options{TTL: 8 * time.Second, Nodes: 5}
	rw := func(clients []*redis.Client) RWLock { return &hashRWLock{c: clients[0]} }
	mutex := func(f Factory) func(*testing.T, Options) { return func(t *testing.T, o Options) { Run(t, f, o) } }
	sem := func(t *testing.T, o Options) { RunSemaphore(t, slotSemaphore(2), 2, o) }
	rwl := func(t *testing.T, o Options) { RunReadWrite(t, rw, o) }
	pgx := func(t *testing.T, o Options) { RunPostgres(t, pinnedAdvisoryLock, o) }
	zkl := func(t *testing.T, o Options) { RunZooKeeper(t, zkNewLock, o) }
	zkOpt := Options{TTL: 4 * time.Second, Hunt: Hunt{Pause: MutualExclusion}}
	return []ttfCase{
		{"setnx-plain-del/stall", Stall, redis2s, mutex(setNXLock(true))},
		{"redislock/pause", Pause, redis2s, mutex(benchRedislock)},
		{"redislock/clock", Clock, redis2s, mutex(benchRedislock)},
		{"redislock/restart", Restart, redis2s, mutex(benchRedislock)},
		{"redsync5/clock", Clock, redlock5, mutex(redlock)},
		{"redsync5/restart", Restart, redlock5, mutex(redlock)},
		{"semaphore2/pause", Pause, redis2s, sem},
		{"semaphore2/restart", Restart, redis2s, sem},
		{"rwlock/pause", Pause, redis2s, rwl},
		{"rwlock/restart", Restart, redis2s, rwl},
		{"pgx-pinned/restart", Restart, redis2s, pgx},
		{"gozk-lock/pause", Pause, zkOpt, zkl},
	}
}

// ttfSweep is what one case came to over the seeds.
type ttfSweep struct {
	firsts []int // first violating run per seed that found one, sorted
	missed int   // seeds without one within the limit
	runs   int   // runs explored, all seeds
	cpu    float64
	bySeed []string
}

// sweepSeeds explores c for seeds 1..20, each in a fresh directory (no
// failfile of an earlier seed is replayed), in a test nested in the
// benchmark: Run wants a *testing.T.
func sweepSeeds(b *testing.B, c ttfCase, limit int) ttfSweep {
	var s ttfSweep
	ok := testing.RunTests(func(pat, str string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: b.Name(), F: func(t *testing.T) {
			got := observeFindings(t)
			cpu0 := cpuTime()
			for seed := uint64(1); seed <= 20; seed++ {
				t.Chdir(t.TempDir())
				opt := c.opt
				opt.Classes, opt.Expect = []Class{c.class}, Expect{c.class: Any}
				opt.Runs, opt.Seed, opt.ShrinkRuns = limit, seed, 1
				delete(got, c.class)
				c.run(t, opt)
				f, ok := got[c.class]
				if !ok {
					t.Fatalf("seed %d: the class came to no finding", seed)
				}
				s.runs += f.runs
				if f.run > 0 {
					s.runs += 3 // the shrink run and two traced runs
					s.firsts = append(s.firsts, f.run)
					s.bySeed = append(s.bySeed, fmt.Sprintf("%d:%d", seed, f.run))
				} else {
					s.missed++
					s.bySeed = append(s.bySeed, fmt.Sprintf("%d:-", seed))
				}
			}
			s.cpu = cpuTime() - cpu0
		}}})
	if !ok {
		b.Fatal("the sweep's test failed")
	}
	slices.Sort(s.firsts)
	return s
}

// report writes the sweep's metrics and, in the log, its row of the
// table in BENCHMARKS.md.
func (s ttfSweep) report(b *testing.B, limit int) {
	found := func(n int) float64 {
		k := 0
		for _, r := range s.firsts {
			if r <= n {
				k++
			}
		}
		return float64(k)
	}
	b.ReportMetric(float64(pct(s.firsts, 50)), "median-run")
	b.ReportMetric(float64(pct(s.firsts, 100)), "max-run")
	for _, n := range []int{40, 100, 250, 400} {
		b.ReportMetric(found(n), fmt.Sprintf("found-by-%d/20", n))
	}
	b.ReportMetric(found(limit), "found/20")
	b.ReportMetric(s.cpu*1000/float64(max(s.runs, 1)), "cpu-ms/run")
	b.Logf("| %s | %v | %d | %d | %d/20 | %d/20 | %d/20 | %d/20 | %d/20 | %.2f |  seed:first %s",
		b.Name(), s.firsts, pct(s.firsts, 50), pct(s.firsts, 100), int(found(40)), int(found(100)), int(found(250)), int(found(400)), int(found(limit)),
		s.cpu*1000/float64(max(s.runs, 1)), strings.Join(s.bySeed, " "))
}

// pct is the p-th percentile of sorted (0 when it is empty).
func pct(sorted []int, p int) int {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, (len(sorted)-1)*p/100)]
}
