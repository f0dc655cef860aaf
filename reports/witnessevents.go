package reports

import (
	"fmt"
	"slices"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/sim/event"
)

// The witness's marks name the events they stand for (data-events), so a
// reader — and TestDrawnClaimsAreEvents — can check them against the log:
// an overlap is the holds that began it, a resource violation the store's
// executions of the offending write and of the access it is judged against.

// overlapEvents are the hold.began events of the holds an overlap is made
// of, in the witness's order.
func (b *tlBuilder) overlapEvents(o *checker.Overlap) []int {
	ivs := o.Holders
	if len(ivs) == 0 {
		ivs = []checker.Interval{o.First, o.Second}
	}
	var ids []int
	for _, iv := range ivs {
		if id, ok := b.holdBegan[fmt.Sprint(iv.Client, "|", iv.Start)]; ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// resourceEvents are the store's command.executed of the offending write,
// then of the access it is judged against (once when they are the same).
func (b *tlBuilder) resourceEvents(r *checker.ResourceWitness) []int {
	ids := b.accessEvent(r.Write)
	for _, id := range b.accessEvent(r.Overwritten) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// unavailableEvents are the holds an unavailable stretch is bounded by:
// for each holder stuck through it, the hold.began of its hold; and the
// hold.began at its end, when a hold ended it (a stretch that lasts to
// the end of the run has none).
func (b *tlBuilder) unavailableEvents(u *checker.Unavailable) []int {
	var ids []int
	for _, c := range u.Stuck {
		last := -1
		for i, e := range b.res.Events {
			if e.At > u.From {
				break
			}
			if e.Kind == event.HoldBegan && e.Actor == c {
				last = i
			}
		}
		if last >= 0 {
			ids = append(ids, last)
		}
	}
	for i, e := range b.res.Events {
		if e.At > u.To {
			break
		}
		if e.Kind == event.HoldBegan && e.At == u.To && !slices.Contains(ids, i) {
			ids = append(ids, i)
		}
	}
	return ids
}
