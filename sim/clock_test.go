package sim

import (
	"math"
	"testing"
	"time"
)

func TestScaleDurationIsExactAndSaturates(t *testing.T) {
	for _, c := range []struct {
		d        time.Duration
		num, den int64
		want     time.Duration
	}{
		{3 * time.Hour, 1_000_000, 1_000_000, 3 * time.Hour},
		{time.Second, 1_000_000, 1_000_001, 999_999_000},
		{-time.Second, 1_000_000, 500_000, -2 * time.Second},
		// -999999 ppm: a million times slow. 3 h is 3e6 h of true time,
		// more than a Duration holds: saturated, not wrapped.
		{3 * time.Hour, 1_000_000, 1, math.MaxInt64},
		{-3 * time.Hour, 1_000_000, 1, math.MinInt64},
		{2 * time.Hour, 1_000_000, 1, 2 * time.Hour * 1_000_000},
		{math.MinInt64, 1, 1, math.MinInt64},
	} {
		if got := ScaleDuration(c.d, c.num, c.den); got != c.want {
			t.Errorf("ScaleDuration(%v, %d, %d) = %v, want %v", c.d, c.num, c.den, got, c.want)
		}
	}
}

// A client whose clock runs at -999999 ppm and works 3 h of its own time
// works past any run: the true-time conversion used to wrap to a negative
// delay and end the work at once (issue 25).
func TestSlowClockSleepOutlastsTheRun(t *testing.T) {
	for _, local := range []time.Duration{2 * time.Hour, 3 * time.Hour} {
		w := New(1)
		h := w.NewHost("c1", NewClock(0, -999_999))
		woke := time.Duration(-1)
		h.Spawn("worker", 0, func(p *Process) {
			p.Sleep(local)
			woke = p.TrueNow()
		})
		if err := w.Run(24 * time.Hour); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if woke != -1 {
			t.Errorf("a %v sleep at -999999 ppm ended at true %v; want it to outlast the 24 h run", local, woke)
		}
	}
}
