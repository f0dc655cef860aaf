package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Overlap witnesses a mutual-exclusion violation: two holds, of two clients
// or of one client twice, that overlap during [From, To).
type Overlap struct {
	First  Interval      `json:"first"`
	Second Interval      `json:"second"`
	From   time.Duration `json:"from_ns"`
	To     time.Duration `json:"to_ns"`
}

func (o *Overlap) String() string {
	if o.First.Client == o.Second.Client {
		return fmt.Sprintf("%s held [%s, %s) (%s) and, again, [%s, %s) (%s): two holds by one client during [%s, %s)",
			o.First.Client, Sec(o.First.Start), Sec(o.First.End), o.First.EndReason,
			Sec(o.Second.Start), Sec(o.Second.End), o.Second.EndReason,
			Sec(o.From), Sec(o.To))
	}
	return fmt.Sprintf("%s held [%s, %s) (%s) and %s held [%s, %s) (%s): both held during [%s, %s)",
		o.First.Client, Sec(o.First.Start), Sec(o.First.End), o.First.EndReason,
		o.Second.Client, Sec(o.Second.Start), Sec(o.Second.End), o.Second.EndReason,
		Sec(o.From), Sec(o.To))
}

// checkExclusion decides mutual exclusion with porcupine and names the
// first overlapping pair with the exact sweep. The two must agree; if they
// ever do not, the verdict is unknown rather than a guess.
func checkExclusion(h History) (Status, *Overlap, porcupine.CheckResult, []porcupine.Operation) {
	ops := mutexOperations(h.Intervals)
	// No timeout (0): the search over hold instants is linear, so it always
	// finishes, and its answer cannot depend on the machine's speed.
	res := porcupine.CheckOperationsTimeout(mutexModel, ops, 0)
	o := FirstOverlap(h.Intervals)
	switch {
	case res == porcupine.Illegal && o != nil:
		return Violated, o, res, ops
	case res == porcupine.Ok && o == nil:
		return OK, nil, res, ops
	}
	return Unknown, o, res, ops
}

// FirstOverlap is the exact sweep: holds in order of their start, the
// earliest instant at which a hold begins while another (of any client,
// the same one included) has not yet ended. Empty holds are skipped; holds
// are half-open, so one ending at t and another beginning at t do not
// overlap. It returns nil when no two holds overlap.
func FirstOverlap(in []Interval) *Overlap {
	idx := make([]int, 0, len(in))
	for i, iv := range in {
		if iv.End > iv.Start {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := &in[a], &in[b]
		if c := cmp.Compare(x.Start, y.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(y.End, x.End); c != 0 {
			return c
		}
		return strings.Compare(x.Client, y.Client)
	})
	longest := -1 // the hold seen so far that ends last
	for _, k := range idx {
		b := in[k]
		if longest >= 0 && b.Start < in[longest].End {
			a := in[longest]
			return &Overlap{First: a, Second: b, From: b.Start, To: min(a.End, b.End)}
		}
		if longest < 0 || b.End > in[longest].End {
			longest = k
		}
	}
	return nil
}
