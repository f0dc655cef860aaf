package runner

import (
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/redis/go-redis/v9"
)

// benchLockCycles runs b.N lock cycles (SET NX PX, then the compare-and-delete
// release) split over 5 clients on one node, and reports cycles per wall
// second and simulated seconds per wall second. With one key the clients
// contend, so a cycle also pays for the failed SETs of the waiters; with a
// key per client it measures the bare cost of a cycle.
func benchLockCycles(b *testing.B, plainLua, ownKeys bool) {
	benchLockCyclesPath(b, plainLua, ownKeys, false)
}

// benchLockCyclesPath is benchLockCycles on the wire path or, with direct,
// on the direct path explore and matrix take (sim.ClientOptions.Direct).
func benchLockCyclesPath(b *testing.B, plainLua, ownKeys, direct bool) {
	const clients = 5
	w := sim.New(1)
	w.Trace.Keep = false
	node := w.NewRedisNode("A", nil)
	if !plainLua {
		node.ScriptFastPath = sim.NativeScripts
	}
	info, _ := algorithms.Lookup("set-nx-px-lua")
	params := algorithms.Params{Key: "lock", TTL: 10 * time.Second, Wait: algorithms.WaitPolicy{Delay: time.Millisecond, Jitter: time.Millisecond}}
	remaining := b.N
	acquired := 0
	for i := 0; i < clients; i++ {
		h := w.NewHost(string(rune('a'+i)), nil)
		pr := params
		if ownKeys {
			pr.Key = "lock-" + h.Name
		}
		lock, err := info.New(pr, algorithms.Conns{Redis: []*redis.Client{node.NewClient(h, sim.ClientOptions{Direct: direct})}})
		if err != nil {
			b.Fatal(err)
		}
		h.Spawn(h.Name, 0, func(p *sim.Process) {
			env := Env(p)
			for remaining > 0 {
				l, err := lock.Acquire(env)
				if err != nil {
					continue
				}
				remaining--
				acquired++
				lock.Release(env, l)
			}
		})
	}
	b.ResetTimer()
	start := time.Now()
	if err := w.Run(1000 * time.Hour); err != nil {
		b.Fatal(err)
	}
	wall := time.Since(start).Seconds()
	if acquired < b.N {
		b.Fatalf("acquired %d of %d", acquired, b.N)
	}
	b.ReportMetric(float64(acquired)/wall, "cycles/s")
	b.ReportMetric(w.Now().Seconds()/wall, "sim-s/s")
}

func BenchmarkLockCycles(b *testing.B) {
	b.Run("one-key/native-scripts", func(b *testing.B) { benchLockCycles(b, false, false) })
	b.Run("one-key/plain-lua", func(b *testing.B) { benchLockCycles(b, true, false) })
	b.Run("key-per-client/native-scripts", func(b *testing.B) { benchLockCycles(b, false, true) })
	b.Run("key-per-client/plain-lua", func(b *testing.B) { benchLockCycles(b, true, true) })
	b.Run("one-key/native-direct", func(b *testing.B) { benchLockCyclesPath(b, false, false, true) })
	b.Run("key-per-client/native-direct", func(b *testing.B) { benchLockCyclesPath(b, false, true, true) })
}

// BenchmarkScenario runs whole catalogue scenarios (workload, faults,
// checker) and reports simulated seconds per wall second.
func BenchmarkScenario(b *testing.B) {
	for _, id := range []string{"del-wrong-client", "setnx-expire-crash"} {
		s, err := scenarios.Get(id)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(id, func(b *testing.B) {
			var simulated time.Duration
			start := time.Now()
			for i := 0; i < b.N; i++ {
				r, err := Run(s, uint64(i+1), Options{})
				if err != nil {
					b.Fatal(err)
				}
				simulated += r.End
			}
			b.ReportMetric(simulated.Seconds()/time.Since(start).Seconds(), "sim-s/s")
		})
	}
}

// BenchmarkEventLog is what the event log costs one catalogue run, in its
// three modes: off (exploration: no event is built), the digest (every
// event rendered to its trace line and hashed, the default of locklab
// run), and kept (the events and the text trace kept, as --events,
// --report and --trace do). Run with -benchmem: allocations do not depend
// on the machine's load, times do.
func BenchmarkEventLog(b *testing.B) {
	for _, id := range []string{"redlock-clock-jump", "wait-one-of-two-failover"} {
		s, err := scenarios.Get(id)
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []struct {
			name string
			opt  Options
		}{{"off", Options{NoTrace: true}}, {"digest", Options{}}, {"kept", Options{KeepTrace: true}}} {
			b.Run(id+"/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				events := 0
				for i := 0; i < b.N; i++ {
					r, err := Run(s, s.Seed, mode.opt)
					if err != nil {
						b.Fatal(err)
					}
					events = len(r.Events)
				}
				b.ReportMetric(float64(events), "events/run")
			})
		}
	}
}
