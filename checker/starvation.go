package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Writer starvation: the lock is never unavailable (readers hold it all
// along, so longestUnavailable finds no gap), yet a writer waits forever,
// because each new reader is let in beside the readers already holding and
// the writer needs everyone out. A read-preferring lock (Redisson's
// RReadWriteLock admits a reader whenever the mode is "read") starves
// writers under a steady stream of readers; a fair one queues readers that
// arrive behind a waiting writer (Curator's InterProcessReadWriteLock).

// Starvation names the writer, how long it waited, and the readers whose
// holds began while it waited.
type Starvation struct {
	Writer  string        `json:"writer"`
	From    time.Duration `json:"from_ns"`
	To      time.Duration `json:"to_ns"`
	Outcome string        `json:"outcome"`
	Bound   time.Duration `json:"bound_ns"`
	// Readers are the readers' holds that began during the wait, in order
	// of their start (at most maxStarvers of them).
	Readers []Interval `json:"readers"`
	// More counts the readers' holds past the ones listed.
	More int `json:"more,omitempty"`
}

const maxStarvers = 10

func (s *Starvation) String() string {
	var rs []string
	for _, r := range s.Readers {
		rs = append(rs, fmt.Sprintf("%s at %s", r.Client, Sec(r.Start)))
	}
	more := ""
	if s.More > 0 {
		more = fmt.Sprintf(" and %d more", s.More)
	}
	return fmt.Sprintf("writer %s starved: it waited %s (bound %s) during [%s, %s] (%s) while readers kept coming in: %s%s",
		s.Writer, (s.To - s.From).Round(time.Millisecond), s.Bound, Sec(s.From), Sec(s.To), s.Outcome, strings.Join(rs, ", "), more)
}

// firstStarvedWriter finds the earliest writer's want longer than bound
// during which some reader's hold began (a reader let in ahead of the
// waiting writer). A writer that waits just as long with no reader coming
// in is not starved by readers; the unavailability check judges that.
func firstStarvedWriter(h History, bound time.Duration) *Starvation {
	var readers []Interval
	for _, iv := range h.Intervals {
		if iv.Shared() && iv.End > iv.Start {
			readers = append(readers, iv)
		}
	}
	if len(readers) == 0 {
		return nil
	}
	slices.SortStableFunc(readers, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
	var first *Starvation
	for _, w := range h.Wants {
		if w.Mode == ModeRead || w.To-w.From <= bound || first != nil && w.From >= first.From {
			continue
		}
		i, _ := slices.BinarySearchFunc(readers, w.From, func(r Interval, t time.Duration) int { return cmp.Compare(r.Start, t) })
		s := &Starvation{Writer: w.Client, From: w.From, To: w.To, Outcome: w.Outcome, Bound: bound}
		for ; i < len(readers) && readers[i].Start < w.To; i++ {
			if len(s.Readers) < maxStarvers {
				s.Readers = append(s.Readers, readers[i])
			} else {
				s.More++
			}
		}
		if len(s.Readers) > 0 {
			first = s
		}
	}
	return first
}
