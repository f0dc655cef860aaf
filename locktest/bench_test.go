package locktest

import (
	"testing"
	"testing/synctest"

	"github.com/locklab/locklab/scenarios"
)

// inBubble runs body inside a synctest bubble from a benchmark: synctest
// wants a *testing.T, so the body runs as a nested test.
func inBubble(b *testing.B, body func(t *testing.T)) {
	ok := testing.RunTests(func(pat, str string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: b.Name(), F: func(t *testing.T) { synctest.Test(t, body) }}})
	if !ok {
		b.Fatal("the bubble's test failed")
	}
}

// BenchmarkBubbleRedlock is one run of redsync's 5-pool Redlock (default
// options, 5 clients, 3 cycles each, 10s of simulated time, a pause and a
// clock jump) per iteration, untraced as exploration runs are.
func BenchmarkBubbleRedlock(b *testing.B) {
	sc := redlockScenario(b)
	opt := Options{TTL: sc.TTL.D()}
	// The benchmark's timer reads the clock of the goroutine that calls
	// it, virtual inside the bubble: it is reset and read outside.
	b.ResetTimer()
	inBubble(b, func(t *testing.T) {
		for i := 0; i < b.N; i++ {
			res, err := scenarios.Run(sc, sc.Seed, scenarios.Options{
				Factory: Factory(redlock).algorithm(opt.TTL, false, false),
				Bubble:  true,
				NoTrace: true,
				Prepare: func(seed uint64) { seedProcessRandom(t, seed) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.End < sc.Duration.D()/2 {
				t.Fatalf("run ended at %v", res.End)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}
