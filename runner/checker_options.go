package runner

import (
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
)

// CheckerOptions are the checker's options for a run of the scenario of
// Redis nodes that ended at end after the faults in applied: the same
// bound, hold limit, permits and excused fault windows a simulated run
// uses (excuses.go).
func CheckerOptions(s *scenarios.Scenario, applied []faults.Applied, end time.Duration) checker.Options {
	return checker.Options{
		Permits:       s.Clients.Permits,
		LivenessBound: s.LivenessBound.D(),
		MaxHold:       s.MaxHold.D(),
		Excused:       excusedWindows(applied, nil, end, reachOf(s, nil)),
	}
}
