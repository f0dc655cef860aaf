package dbnet_test

import (
	"context"
	"flag"
	"testing"
	"testing/synctest"
	"time"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/dbnet"
)

var benchCycles = flag.Int("dbnet.cycles", 0, "run TestPgxLockCycleRate with this many lock cycles and log cycles per second of wall time (BENCHMARKS.md)")

// TestPgxLockCycleRate measures lock cycles (pg_advisory_lock, then
// pg_advisory_unlock) through one unmodified pgx connection over the
// simulated network, in a world's bubble: every segment is a kernel event.
// A benchmark cannot host a synctest bubble (synctest.Test takes a
// *testing.T), so this is a test that runs only when asked and logs the
// rate; it asserts nothing about time.
//
//	go test ./sim/dbnet -run TestPgxLockCycleRate -dbnet.cycles 2000 -v
func TestPgxLockCycleRate(t *testing.T) {
	if *benchCycles <= 0 {
		t.Skip("measures only with -dbnet.cycles N")
	}
	n := *benchCycles
	var simulated time.Duration
	var segments int
	start := time.Now()
	synctest.Test(t, func(t *testing.T) {
		pw := newPgWorld(1, dbnet.Keepalive{})
		c1 := pw.w.NewHost("c1", nil)
		c1.Spawn("c1", 0, func(p *sim.Process) {
			c := pw.connect(p)
			ctx := context.Background()
			for i := 0; i < n; i++ {
				var err error
				var ok bool
				p.Outside(func() {
					if _, err = c.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(42)); err == nil {
						err = c.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", int64(42)).Scan(&ok)
					}
				})
				if err != nil || !ok {
					panic("cycle failed")
				}
			}
		})
		pw.w.Trace.Off = true
		if err := pw.w.Run(24 * time.Hour); err != nil {
			t.Fatal(err)
		}
		simulated, segments = pw.w.Now(), pw.net.Segments()
	})
	wall := time.Since(start)
	t.Logf("%d cycles in %v of wall time: %.0f cycles/s (%d segments, %v simulated)", n, wall, float64(n)/wall.Seconds(), segments, simulated)
}
