package runner

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/sim"
)

// CutShort is the end reason of a hold, and the outcome of a want, still
// open when a limit cut the run short.
const CutShort = "run cut short"

// Stop says that a limit ended a run before its duration (Result.Stopped).
//
// What the verdict of such a run means: the history ends at the cut, and
// the checker judges it as if the scenario's duration ended there. A
// mutual-exclusion or resource violation it reports happened (before the
// cut); "ok" says only that none happened before the cut. Liveness is
// judged up to the cut: a lock unavailable at the cut counts only the
// stretch before it, so a starvation that had not yet lasted the bound is
// not reported, and one that had is.
type Stop struct {
	// Limit is "work" (the work budget, --max-work) or "same-instant"
	// (too many events at one instant of true time: time stopped).
	Limit string `json:"limit"`
	// At is the true time of the cut, where the history ends.
	At time.Duration `json:"at_ns"`
	// Work is the kernel's work when the limit tripped; Budget the
	// limit's value.
	Work   int64 `json:"work"`
	Budget int64 `json:"budget"`
	// Hint says how to get further.
	Hint string `json:"hint"`
}

// Text is one sentence for the text summary.
func (s *Stop) Text() string {
	if s.Limit == sim.LimitSameInstant {
		return fmt.Sprintf("the run was cut short at %s: time stopped there (more than %d events at one instant); %s", checker.Sec(s.At), s.Budget, s.Hint)
	}
	return fmt.Sprintf("the run was cut short at %s: it used its work budget of %d kernel steps (events scheduled, messages lost, bytes carried); %s", checker.Sec(s.At), s.Budget, s.Hint)
}

func stopOf(c *sim.Cut) *Stop {
	if c == nil {
		return nil
	}
	s := &Stop{Limit: c.Limit, At: c.At, Work: c.Work, Budget: c.Budget}
	switch c.Limit {
	case sim.LimitSameInstant:
		s.Hint = "a client retries with no delay over a network with no latency; give the network a latency or the wait a delay"
	default:
		s.Hint = fmt.Sprintf("raise it with --max-work (now %d), or shorten the duration; the verdict covers the history up to the cut", c.Budget)
	}
	return s
}
