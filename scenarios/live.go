package scenarios

import (
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/algorithms"
)

// This file is what package live (real servers, real time) and the
// runner read of a scenario beyond its exported fields, so that a live run
// builds its locks and draws its workload exactly as a simulated run of
// the same file does (it judges its history with runner.CheckerOptions).

// LockParams are the parameters client's lock is built with: the
// scenario's, with the client's hold mode and permits where declared.
func (s *Scenario) LockParams(client string) algorithms.Params {
	return s.clientParams(s.params(), client)
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

// draw draws a duration from r with rng: uniform over [Min, Max].
func draw(rng *rand.Rand, r Range) time.Duration {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + time.Duration(rng.Int64N(int64(r.Max-r.Min)+1))
}
