package locktest

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bsm/redislock"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/locklab/locklab/algorithms/pglock"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/redis/go-redis/v9"
)

// The bubble path's speed: each benchmark runs one fixed run of a real
// client library per iteration, untraced as exploration runs are, all in
// one synctest bubble as a class's exploration does (runClass). Two
// figures: runs/s of wall time, and cpu-ms/run — the process's CPU time
// per run, which the other work on a shared machine does not inflate.
// Measured with -cpu 1 (BENCHMARKS.md, "The bubble path at exploration
// speed"):
//
//	go test ./locktest -run XXX -bench 'Bubble' -cpu 1 -benchtime 60x

// inBubble runs body inside a synctest bubble from a benchmark: synctest
// wants a *testing.T, so the body runs as a nested test.
func inBubble(b *testing.B, body func(t *testing.T)) {
	ok := testing.RunTests(func(pat, str string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: b.Name(), F: func(t *testing.T) { synctest.Test(t, body) }}})
	if !ok {
		b.Fatal("the bubble's test failed")
	}
}

// benchBubble runs sc b.N times through f, in one bubble.
func benchBubble(b *testing.B, sc *scenarios.Scenario, f builder, opt Options) {
	// The benchmark's timer reads the clock of the goroutine that calls
	// it, virtual inside the bubble: it is reset and read outside.
	defer exploreGC()() // as runClass does
	b.ResetTimer()
	cpu0, msgs := cpuTime(), 0
	inBubble(b, func(t *testing.T) {
		for i := 0; i < b.N; i++ {
			res, err := runner.Run(sc, sc.Seed, runner.Options{
				Factory: f.algorithm(opt.TTL, opt.Renews, opt.Fencing),
				Bubble:  true,
				NoTrace: true,
				Prepare: func(seed uint64) { seedProcessRandom(t, seed) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.End < sc.Duration.D()/2 || res.Messages == 0 {
				t.Fatalf("run ended at %v after %d messages", res.End, res.Messages)
			}
			msgs += res.Messages
		}
	})
	b.StopTimer()
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	b.ReportMetric(float64(msgs)/float64(b.N), "msgs/run")
	b.ReportMetric(cpu*1000/float64(b.N), "cpu-ms/run")
}

// pausedRun is the benchmarks' run of opt's setup: client c2 pauses at
// 1.5s for pause.
func pausedRun(b *testing.B, sc *scenarios.Scenario, err error, pause time.Duration) *scenarios.Scenario {
	if err != nil {
		b.Fatal(err)
	}
	at := faults.Duration(1500 * time.Millisecond)
	sc.Faults = faults.Schedule{{Kind: faults.Pause, Target: "c2", At: &at, Duration: faults.Duration(pause)}}
	sc.Seed = 42
	return sc
}

// benchOptions are the benchmarks' workload: 3 clients × 3 cycles for 10
// simulated seconds.
func benchOptions(ttl time.Duration) Options {
	opt := Options{TTL: ttl, Clients: 3, Cycles: 3, Work: ttl / 4, Duration: 10 * time.Second}
	if err := opt.defaults(); err != nil {
		panic(err)
	}
	return opt
}

// BenchmarkBubbleRedsync5 is redsync's 5-pool Redlock with its default
// options (5 clients, 3 cycles each, 10s of simulated time, a pause and a
// clock jump; redlockScenario).
func BenchmarkBubbleRedsync5(b *testing.B) {
	sc := redlockScenario(b)
	benchBubble(b, sc, Factory(redlock), Options{TTL: sc.TTL.D()})
}

// BenchmarkBubbleRedislock is bsm/redislock on one node.
func BenchmarkBubbleRedislock(b *testing.B) {
	opt := benchOptions(2 * time.Second)
	sc, err := opt.base()
	benchBubble(b, pausedRun(b, sc, err, 3*time.Second), Factory(benchRedislock), opt)
}

func benchRedislock(clients []*redis.Client) Lock {
	c := redislock.New(clients[0])
	var held *redislock.Lock
	return Funcs{
		LockFunc: func(ctx context.Context) (err error) {
			held, err = c.Obtain(ctx, "lock", 2*time.Second, &redislock.Options{Token: Token(ctx)})
			return err
		},
		UnlockFunc: func(ctx context.Context) error { return held.Release(ctx) },
	}
}

// BenchmarkBubblePgxPinned is a pinned pgx session lock
// (pinnedAdvisoryLock) on a pgxpool, as RunPostgres opens it.
func BenchmarkBubblePgxPinned(b *testing.B) {
	opt := benchOptions(2 * time.Second)
	opt.Database.PoolSize = 10
	sc, err := opt.dbBase(customPostgres)
	f := dbBuilder{open: func(c any, o Database) (any, func(), error) {
		client, ok := c.(*pglock.Client)
		if !ok {
			return nil, nil, fmt.Errorf("expected a Postgres client, got %T", c)
		}
		pc, err := pgxpool.ParseConfig("")
		if err != nil {
			return nil, nil, err
		}
		pc.ConnConfig = client.Config()
		pc.MaxConns = int32(o.PoolSize)
		pool, err := pgxpool.NewWithConfig(context.Background(), pc)
		if err != nil {
			return nil, nil, err
		}
		return pool, pool.Close, nil
	}, build: func(h any) Lock { return pinnedAdvisoryLock(h.(*pgxpool.Pool)) }, opt: opt.Database}
	benchBubble(b, pausedRun(b, sc, err, 3*time.Second), f, opt)
}

// BenchmarkBubbleGozkLock is go-zookeeper's zk.NewLock on one ZooKeeper
// server, its session timeout the TTL.
func BenchmarkBubbleGozkLock(b *testing.B) {
	opt := benchOptions(4 * time.Second)
	opt.Renews = true
	sc, err := opt.zkBase()
	benchBubble(b, pausedRun(b, sc, err, 5*time.Second), zkBuilder{zkNewLock}, opt)
}
