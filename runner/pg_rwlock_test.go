package runner

import (
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

// The Postgres reader-writer lock: readers share the advisory key; a
// polling writer starves behind them, a writer waiting in the server's
// queue gets in soon after the readers it queued behind.
func TestPostgresReadWriteLock(t *testing.T) {
	bubblehost.Bind(t)
	run := func(id string) *Result {
		sc, err := scenarios.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(sc, 7, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	polled := run("pg-rwlock-writer-starvation")
	if s := polled.Report.Witness.Starvation; s == nil || s.Writer != "c4" {
		t.Fatalf("polling: starvation witness %v, want writer c4", s)
	}
	blocked := run("pg-rwlock-writer-starvation-fixed")
	var shared bool
	var c4 time.Duration = -1
	ivs := blocked.History.Intervals
	for i, a := range ivs {
		if a.Client == "c4" {
			c4 = a.Start
		}
		for _, b := range ivs[i+1:] {
			if a.Client != b.Client && a.Mode == scenarios.ModeRead && b.Mode == scenarios.ModeRead && a.Start < b.End && b.Start < a.End {
				shared = true
			}
		}
	}
	if !shared {
		t.Error("blocking: no two readers ever read together")
	}
	if c4 < 0 || c4 > 1500*time.Millisecond {
		t.Fatalf("blocking: the writer got in at %v, want within the readers' first round (before 1.5s)", c4)
	}
}
