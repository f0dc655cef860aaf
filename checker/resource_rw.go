package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// WriteUnderRead is the resource witness kind of a write accepted while its
// client held the lock only as a reader: a read lock admits other readers
// at the same time, so a write under it races them (and every other reader
// that also writes).
const WriteUnderRead = "write under a read lock"

// firstWriteUnderRead finds the earliest accepted write made while its
// client held a reader's hold and no exclusive one: readers read, only
// writers write. One sweep over the holds' edges and the writes, in true
// time (ends, then beginnings, then writes at one instant: holds are
// half-open), keeping per client the readers' holds under way.
func firstWriteUnderRead(h History) *ResourceWitness {
	if !hasReaders(h.Intervals) {
		return nil
	}
	type event struct {
		at   time.Duration
		kind int // 0 a hold ends, 1 a hold begins, 2 a write
		k    int // index of the hold or of the access
	}
	var es []event
	for k, iv := range h.Intervals {
		if iv.End > iv.Start {
			es = append(es, event{iv.Start, 1, k}, event{iv.End, 0, k})
		}
	}
	for k, a := range h.Accesses {
		if a.Accepted && a.Kind == "write" {
			es = append(es, event{a.At, 2, k})
		}
	}
	slices.SortFunc(es, func(x, y event) int {
		return cmp.Or(cmp.Compare(x.at, y.at), cmp.Compare(x.kind, y.kind), cmp.Compare(x.k, y.k))
	})
	readers := map[string][]int{} // client -> its readers' holds under way
	exclusive := map[string]int{} // client -> its exclusive holds under way
	for _, e := range es {
		switch e.kind {
		case 2:
			a := h.Accesses[e.k]
			if rs := readers[a.Client]; len(rs) > 0 && exclusive[a.Client] == 0 {
				hold := h.Intervals[rs[0]]
				return &ResourceWitness{Kind: WriteUnderRead, Write: a, Overwritten: a, Hold: &hold}
			}
			continue
		}
		iv := h.Intervals[e.k]
		switch {
		case !iv.Shared() && e.kind == 1:
			exclusive[iv.Client]++
		case !iv.Shared():
			exclusive[iv.Client]--
		case e.kind == 1:
			readers[iv.Client] = append(readers[iv.Client], e.k)
		default:
			readers[iv.Client] = slices.DeleteFunc(readers[iv.Client], func(k int) bool { return k == e.k })
		}
	}
	return nil
}

func hasReaders(in []Interval) bool {
	for _, i := range in {
		if i.Shared() {
			return true
		}
	}
	return false
}

func (r *ResourceWitness) writeUnderReadString() string {
	return fmt.Sprintf("write under a read lock: %s wrote %d at %s while it held [%s, %s) only as a reader; readers read, only writers write",
		r.Write.Client, r.Write.Value, Sec(r.Write.At), Sec(r.Hold.Start), Sec(r.Hold.End))
}
