package checker

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// Status is the outcome for one property.
type Status string

const (
	OK       Status = "ok"
	Violated Status = "violated"
	Unknown  Status = "unknown"
)

// Verdict gives a status per property.
type Verdict struct {
	MutualExclusion Status `json:"mutual_exclusion"`
	Resource        Status `json:"resource"`
	Liveness        Status `json:"liveness"`
}

// Witness collects the evidence for each violated property.
type Witness struct {
	MutualExclusion *Overlap         `json:"mutual_exclusion,omitempty"`
	Resource        *ResourceWitness `json:"resource,omitempty"`
	Liveness        *Unavailable     `json:"liveness,omitempty"`
	// Starvation witnesses a liveness violation of a reader-writer lock:
	// a writer kept waiting past the bound while readers kept coming in.
	Starvation *Starvation `json:"starvation,omitempty"`
}

// Metrics are figures worth reporting beside verdicts.
type Metrics struct {
	Acquisitions   int           `json:"acquisitions"`
	Writes         int           `json:"writes"`
	RejectedWrites int           `json:"rejected_writes"`
	FinalValue     int64         `json:"final_value"`
	Unavailable    time.Duration `json:"unavailable_ns"`
}

// Options tunes the checks. Nothing in it bounds the work by time: every
// check finishes on every history, with the same answer on any machine.
type Options struct {
	// LivenessBound is the longest the lock may stay unavailable, faults'
	// share excused, while wanted; zero disables the liveness check
	// (reported ok).
	LivenessBound time.Duration
	// Excused are the fault windows (see Window): unavailability inside
	// them does not count against LivenessBound, and the witness lists
	// them. A lock must recover once faults heal, not work through them.
	Excused []Window
	// MaxHold, when set, is the longest a holder may keep the lock while
	// others wait; past it the lock counts as unavailable (a stuck holder).
	MaxHold time.Duration
	// Permits, when more than one, makes the lock a counting semaphore:
	// mutual exclusion then means at most Permits holders at any instant.
	// Otherwise a history with readers' holds (Interval.Mode "read") is a
	// reader-writer lock's, and any other a mutex's.
	Permits int
}

// Report is the checker's output for one history.
type Report struct {
	Verdict Verdict `json:"verdict"`
	Witness Witness `json:"witness"`
	Metrics Metrics `json:"metrics"`
	// Porcupine is porcupine's own result over the hold instants ("Ok" or
	// "Illegal"); the sweep's witness always agrees with it.
	Porcupine string `json:"porcupine"`

	ops     []porcupine.Operation
	model   porcupine.Model
	clients []string
	excused []Window
}

// Check runs every check over h.
func Check(h History, opt Options) *Report {
	r := &Report{excused: opt.Excused}
	r.Metrics.Acquisitions = len(h.Intervals)

	var res porcupine.CheckResult
	r.Verdict.MutualExclusion, r.Witness.MutualExclusion, res, r.ops, r.model = checkExclusion(h, opt.Permits)
	r.Porcupine = string(res)
	r.clients, _ = clientIndex(h.Intervals)

	r.Verdict.Resource, r.Witness.Resource = checkResource(h, &r.Metrics)
	if r.Verdict.Resource == OK {
		if w := firstWriteUnderRead(h); w != nil {
			r.Verdict.Resource, r.Witness.Resource = Violated, w
		}
	}

	r.Verdict.Liveness = OK
	if gap := longestUnavailable(h, opt.MaxHold, opt.Excused); gap != nil {
		r.Metrics.Unavailable = gap.To - gap.From
		if opt.LivenessBound > 0 && gap.Blamed > opt.LivenessBound {
			gap.Bound = opt.LivenessBound
			r.Verdict.Liveness = Violated
			r.Witness.Liveness = gap
		}
	}
	if r.Verdict.Liveness == OK && opt.LivenessBound > 0 {
		if s := firstStarvedWriter(h, opt.LivenessBound); s != nil {
			r.Verdict.Liveness, r.Witness.Starvation = Violated, s
		}
	}
	return r
}

// Sec renders a true time in seconds for witnesses.
func Sec(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }
