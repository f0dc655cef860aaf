package runner

import (
	"time"

	"github.com/locklab/locklab/sim/event"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/sim"
)

// holdBegan records a hold: its token (a lock whose library keeps the
// token to itself, as go-zookeeper's zk.Lock does, has none), its fencing
// token, and when it ends — a Redis lease at a time on the client's clock
// (Validity), a ZooKeeper lease when its session is lost (no Validity).
func holdBegan(client string, l *algorithms.Lease) event.Event {
	e := event.Event{Kind: event.HoldBegan, Client: client, Resource: l.Resource, LockValue: l.LockValue, FencingToken: l.FencingToken}
	if l.HasDeadline() {
		e.Validity = l.Validity.Sub(sim.Epoch)
	}
	return e
}

// recorder builds the history as the run goes.
type recorder struct {
	w         *sim.World
	intervals []*openInterval
	holding   map[string]*openInterval
	wants     []checker.Want
	wanting   map[string]int // index into wants
}

type openInterval struct {
	checker.Interval
	ended bool
}

func newRecorder(w *sim.World) *recorder {
	return &recorder{w: w, holding: map[string]*openInterval{}, wanting: map[string]int{}}
}

func (r *recorder) want(client string) {
	r.wants = append(r.wants, checker.Want{Client: client, From: r.w.Now(), To: -1})
	r.wanting[client] = len(r.wants) - 1
}

func (r *recorder) endWant(client, outcome string, at time.Duration) {
	if i, ok := r.wanting[client]; ok {
		r.wants[i].To = at
		r.wants[i].Outcome = outcome
		delete(r.wanting, client)
	}
}

func (r *recorder) acquired(client string, call time.Duration, l *algorithms.Lease) {
	now := r.w.Now()
	r.endWant(client, "acquired", now)
	iv := &openInterval{
		Interval: checker.Interval{Client: client, AcquireCall: call, Start: now, LockValue: l.LockValue, FencingToken: l.FencingToken},
	}
	r.intervals = append(r.intervals, iv)
	r.holding[client] = iv
}

func (r *recorder) stop(client, reason string) {
	if iv, ok := r.holding[client]; ok {
		iv.End, iv.EndReason, iv.ended = r.w.Now(), reason, true
		delete(r.holding, client)
	}
}

func (r *recorder) crash(client string) {
	r.stop(client, "crash")
	r.endWant(client, "crash", r.w.Now())
}

// finish closes what is still open at the end of the run. A hold is not
// cut at the lease's validity deadline: a client that never consults its
// deadline goes on acting as holder (Kleppmann's paused client), so it
// holds until it releases, crashes, learns it lost the lock, or checks its
// lease and stops (recorded by the workload as it happens). A run a limit
// cut short closes them at the cut, saying so (stopped != nil).
func (r *recorder) finish(end time.Duration, stopped *Stop, inv *sim.Inventory) checker.History {
	h := checker.History{End: end, Initial: inv.Initial, Accesses: inv.Log, Fenced: inv.Rule != sim.FenceNone}
	reason := "end of run"
	if stopped != nil {
		reason = CutShort
	}
	for _, iv := range r.intervals {
		if !iv.ended {
			iv.End, iv.EndReason = end, reason
		}
		h.Intervals = append(h.Intervals, iv.Interval)
	}
	for _, wt := range r.wants {
		if wt.To < 0 {
			wt.To, wt.Outcome = end, reason
		}
		h.Wants = append(h.Wants, wt)
	}
	return h
}
