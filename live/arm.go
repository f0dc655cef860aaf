package live

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/faults"
)

// arm schedules every fault of the scenario: one at a true time fires on a
// timer from the run's start, one on a message (After) waits in the fabric.
func (r *run) arm() {
	for _, f := range r.sc.Faults {
		switch {
		case f.After != nil:
			r.fabric.await(f)
		case f.At != nil && f.At.D() > 0:
			r.later(f.At.D(), func() { r.apply(f) })
		default:
			// No time and no message: from the start (faults.Arm). Applied
			// here, before any client starts, so nothing slips past it.
			r.apply(f)
		}
	}
}

// later runs fn after d, on a timer the run stops when it ends.
func (r *run) later(d time.Duration, fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timers = append(r.timers, time.AfterFunc(d, fn))
}

// apply makes fault f happen now and records it.
func (r *run) apply(f faults.Fault) {
	at := r.since()
	a := faults.Applied{At: at, Fault: f, Text: f.String()}
	if f.Duration > 0 && f.Kind != faults.Delay {
		a.Until = at + f.Duration.D()
	}
	note := ""
	switch f.Kind {
	case faults.Pause:
		r.clients[f.Target].pause(f.Duration.D())
	case faults.Hang:
		r.clients[f.Target].hang(f.Duration.D())
	case faults.Crash:
		r.clients[f.Target].crash()
	case faults.Drop, faults.Delay:
		r.fabric.addRule(f)
	case faults.Partition:
		r.fabric.partition(f)
	case faults.Heal:
		r.fabric.heal()
	case faults.ClockJump:
		if c, ok := r.clients[f.Target]; ok {
			if !c.jump(f.Jump.D()) {
				note = " (ignored: the client reads a monotonic clock)"
			}
		} else if s, ok := r.backend.process(f.Target).(*redisServer); ok {
			n, err := s.shiftTTLs(context.Background(), f.Jump.D())
			note = fmt.Sprintf(" (%d expiries moved", n)
			if err != nil {
				note += ", error: " + err.Error()
			}
			note += ")"
		}
	case faults.Drift:
		r.clients[f.Target].drift(f.PPM)
	case faults.NodeCrash:
		s := r.backend.process(f.Target)
		s.kill()
		if f.RestartAfter > 0 {
			r.later(f.RestartAfter.D(), func() {
				if err := s.start(); err != nil {
					r.log(fmt.Sprintf("%8.3fs  restart of %s failed: %v", r.since().Seconds(), f.Target, err))
				}
			})
		}
	}
	r.mu.Lock()
	r.applied = append(r.applied, a)
	r.mu.Unlock()
	r.log(fmt.Sprintf("%8.3fs  %s%s", at.Seconds(), a.Text, note))
}

func (r *run) log(line string) {
	if r.opt.Log != nil {
		r.opt.Log(line)
	}
}
