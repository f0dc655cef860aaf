package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The exact sweeps for the primitives that allow more than one holder at
// once: a counting semaphore (at most Permits holds at any instant) and a
// reader-writer lock (a writer's hold overlaps no other hold; readers'
// holds overlap each other freely). Like FirstOverlap they walk the holds'
// edges in true time; holds are half-open, so at one instant every end
// comes before every beginning, and an empty hold is no hold at all.

// edge is one end of a hold: where it begins or where it ends.
type edge struct {
	at    time.Duration
	begin bool
	hold  int
}

// holdEdges lists the edges of the non-empty holds in sweep order: by
// time, ends before beginnings, then by client name and hold index, so
// that the witness of simultaneous beginnings does not depend on the order
// the history recorded them in.
func holdEdges(in []Interval) []edge {
	es := make([]edge, 0, 2*len(in))
	for k, iv := range in {
		if iv.End > iv.Start {
			es = append(es, edge{at: iv.Start, begin: true, hold: k}, edge{at: iv.End, hold: k})
		}
	}
	slices.SortFunc(es, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if a.begin != b.begin {
			if a.begin {
				return 1
			}
			return -1
		}
		if c := strings.Compare(in[a.hold].Client, in[b.hold].Client); c != 0 {
			return c
		}
		return cmp.Compare(a.hold, b.hold)
	})
	return es
}

// FirstCrowd is the semaphore's exact sweep: the earliest instant at which
// a hold begins while permits others have not ended, with all permits+1
// holds named. It returns nil when no instant has more than permits holds.
func FirstCrowd(in []Interval, permits int) *Overlap {
	var active []int // holds under way, in the order they began
	for _, e := range holdEdges(in) {
		if !e.begin {
			active = slices.DeleteFunc(active, func(k int) bool { return k == e.hold })
			continue
		}
		active = append(active, e.hold)
		if len(active) <= permits {
			continue
		}
		o := &Overlap{From: e.at, To: in[e.hold].End, Permits: permits}
		for _, k := range active {
			o.Holders = append(o.Holders, in[k])
			o.To = min(o.To, in[k].End)
		}
		o.First, o.Second = o.Holders[0], in[e.hold]
		return o
	}
	return nil
}

// FirstConflict is the reader-writer lock's exact sweep: the earliest
// instant at which a writer's hold begins while any hold is under way, or
// a reader's begins while a writer's is. The witness pairs the newcomer
// with the earliest-begun hold it conflicts with. It returns nil when
// every writer held alone.
func FirstConflict(in []Interval) *Overlap {
	var active []int
	for _, e := range holdEdges(in) {
		if !e.begin {
			active = slices.DeleteFunc(active, func(k int) bool { return k == e.hold })
			continue
		}
		b := in[e.hold]
		for _, k := range active {
			if a := in[k]; !b.Shared() || !a.Shared() {
				return &Overlap{First: a, Second: b, From: b.Start, To: min(a.End, b.End)}
			}
		}
		active = append(active, e.hold)
	}
	return nil
}

// crowdString renders a semaphore witness: every holder and its hold.
func (o *Overlap) crowdString() string {
	var hs []string
	for _, h := range o.Holders {
		hs = append(hs, fmt.Sprintf("%s [%s, %s) (%s)", h.Client, Sec(h.Start), Sec(h.End), h.EndReason))
	}
	from, to := SecSpan(o.From, o.To)
	return fmt.Sprintf("%d holders of a %d-permit semaphore during [%s, %s): %s",
		len(o.Holders), o.Permits, from, to, strings.Join(hs, ", "))
}
