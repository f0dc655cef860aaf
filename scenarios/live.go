package scenarios

import (
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
)

// This file is what package live (real servers, real time) reads of a
// scenario beyond its exported fields, so that a live run builds its locks
// and judges its history exactly as a simulated run of the same file does.

// LockParams are the parameters client's lock is built with: the
// scenario's, with the client's hold mode and permits where declared.
func (s *Scenario) LockParams(client string) algorithms.Params {
	return s.clientParams(s.params(), client)
}

// CheckerOptions are the checker's options for a run of the scenario of
// Redis nodes that ended at end after the faults in applied: the same
// bound, hold limit, permits and excused fault windows a simulated run
// uses (excuses.go).
func (s *Scenario) CheckerOptions(applied []faults.Applied, end time.Duration) checker.Options {
	return checker.Options{
		Permits:       s.Clients.Permits,
		LivenessBound: s.LivenessBound.D(),
		MaxHold:       s.MaxHold.D(),
		Excused:       excusedWindows(applied, nil, end, reachOf(s, nil)),
	}
}

// ClientPlan is what one client of the scenario does: when it starts, how
// many cycles it runs, how long it works while holding and thinks between
// holds, each per-client override applied.
type ClientPlan struct {
	Start, Work, Think Range
	Cycles             int
	// Writes is false for a reader of a reader-writer lock and a holder of
	// a semaphore's permits: they only read the resource.
	Writes bool
}

// Plan returns client's plan.
func (s *Scenario) Plan(client string) ClientPlan {
	c := s.Clients
	p := ClientPlan{Start: c.Start, Work: c.Work, Think: c.Think, Cycles: c.Cycles}
	over := s.Clients.Each[client]
	if over.Start != nil {
		p.Start = *over.Start
	}
	if over.Work != nil {
		p.Work = *over.Work
	}
	if over.Cycles != nil {
		p.Cycles = *over.Cycles
	}
	p.Writes = s.ModeOf(client) != ModeRead && s.Clients.Permits <= 1
	return p
}

// Draw draws a duration from r with rng, as a simulated run draws it.
func Draw(rng *rand.Rand, r Range) time.Duration { return draw(rng, r) }
