package runner

import (
	"errors"
	"fmt"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

// runInBubble runs a scenario whose algorithm runs real client code
// (Info.Bubble: the go-zookeeper client starts goroutines and sleeps on
// timers) inside a fresh testing/synctest bubble, where that code's time
// is virtual and the kernel can deliver one event at a time
// (sim/bubble.go). The bubble needs a host: the locklab command provides
// one (bubblehost.Main), a test binds its *testing.T (bubblehost.Bind).
func runInBubble(sc *scenarios.Scenario, seed uint64, opt Options, info algorithms.Info) (*Result, error) {
	// The library draws from crypto/rand (go-zookeeper's protected node
	// names); seeded by the run's seed, those names replay too. RunSeeded
	// seeds and runs under one lock: explore's parallel workers cannot
	// draw from each other's stream.
	opt.Bubble = true
	var res *Result
	var runErr error
	err := bubblehost.RunSeeded(seed, func() { res, runErr = Run(sc, seed, opt) })
	switch {
	case errors.Is(err, bubblehost.ErrNoHost):
		return nil, fmt.Errorf("scenario %s: algorithm %s runs real client code (%s backend) that needs a testing/synctest bubble, and nothing hosts one here: the locklab command does it by itself; a Go test must call bubblehost.Bind(t) (package github.com/locklab/locklab/sim/bubblehost) before running the scenario", sc.ID, info.Name, info.Backend)
	case err != nil && runErr != nil:
		// The run failed and left goroutines blocked — the end of the run
		// gave up waiting for the lock's code, say — and synctest then
		// reports those as a deadlock when the bubble's main returns: the
		// run's own error names the cause.
		return nil, fmt.Errorf("%w\n(then %v)", runErr, err)
	case err != nil:
		return nil, fmt.Errorf("scenario %s, seed %d: %w", sc.ID, seed, err)
	}
	return res, runErr
}
