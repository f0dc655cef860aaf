package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Window is a stretch of true time during which a fault, not the lock,
// keeps the lock out of reach. With Client set it is that client's own
// fault (its pause): the client is no live waiter during it. Without, it
// excuses everybody's waiting (a partition, a drop rule, delayed messages,
// a node's downtime).
type Window struct {
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
	// Client, when set, names the waiter the window is about.
	Client string `json:"client,omitempty"`
	// Why says what the fault was, for the witness ("partition c1|n1",
	// "paused").
	Why string `json:"why,omitempty"`
}

// Excuse is one fault's share of an unavailable stretch.
type Excuse struct {
	Why     string        `json:"why"`
	Client  string        `json:"client,omitempty"`
	Excused time.Duration `json:"excused_ns"`
}

func (e Excuse) String() string {
	d := e.Excused.Round(time.Millisecond)
	if e.Client != "" {
		return fmt.Sprintf("%s %s %s of this gap", e.Client, e.Why, d)
	}
	return fmt.Sprintf("%s %s", e.Why, d)
}

// Unavailable witnesses a liveness violation: nobody held the lock during
// [From, To] although Waiting wanted it, and the faults excuse only part
// of it.
type Unavailable struct {
	From    time.Duration `json:"from_ns"`
	To      time.Duration `json:"to_ns"`
	Waiting []string      `json:"waiting"`
	Bound   time.Duration `json:"bound_ns"`
	// Blamed is the part of the stretch no fault excuses.
	Blamed time.Duration `json:"blamed_ns"`
	// Excuses lists each fault's share of the rest.
	Excuses []Excuse `json:"excuses,omitempty"`
	// Stuck names a holder that had held the lock longer than MaxHold during
	// the stretch (a hung worker whose watchdog keeps renewing).
	Stuck []string `json:"stuck,omitempty"`
}

func (u *Unavailable) String() string {
	who := "nobody held it"
	if len(u.Stuck) > 0 {
		who = fmt.Sprintf("%v held it without letting go", u.Stuck)
	}
	s := fmt.Sprintf("lock unavailable for %s (bound %s) during [%s, %s] while %v waited and %s",
		(u.To - u.From).Round(time.Millisecond), u.Bound, Sec(u.From), Sec(u.To), u.Waiting, who)
	if len(u.Excuses) > 0 {
		var ex []string
		for _, e := range u.Excuses {
			ex = append(ex, e.String())
		}
		s += fmt.Sprintf("; %s of it excused by faults (%s)", (u.To - u.From - u.Blamed).Round(time.Millisecond), strings.Join(ex, ", "))
	}
	return s
}

// liveEdge is one change of the liveness sweep's state.
type liveEdge struct {
	at     time.Duration
	kind   int // edgeHold, edgeWant, edgePause, edgeExcuse
	delta  int
	client string
	excuse int // index into the windows, for edgePause and edgeExcuse
}

const (
	edgeHold = iota
	edgeWant
	edgePause
	edgeExcuse
)

// longestUnavailable sweeps true time and returns the stretch with the
// most unexcused unavailability: a maximal stretch during which nobody
// held the lock and some client wanted it. Inside it, time counts against
// the lock unless a global fault window covers it or every waiter is
// paused.
func longestUnavailable(h History, maxHold time.Duration, windows []Window) *Unavailable {
	edges := make([]liveEdge, 0, 2*(len(h.Intervals)+len(h.Wants)+len(windows)))
	stuck := map[string]bool{}
	for _, iv := range h.Intervals {
		if iv.End <= iv.Start {
			continue
		}
		end := iv.End
		if maxHold > 0 && end-iv.Start > maxHold {
			// For liveness the holder stops counting after MaxHold.
			end = iv.Start + maxHold
			stuck[iv.Client] = true
		}
		edges = append(edges, liveEdge{at: iv.Start, kind: edgeHold, delta: +1, client: iv.Client}, liveEdge{at: end, kind: edgeHold, delta: -1, client: iv.Client})
	}
	for _, wt := range h.Wants {
		if wt.To > wt.From {
			edges = append(edges, liveEdge{at: wt.From, kind: edgeWant, delta: +1, client: wt.Client}, liveEdge{at: wt.To, kind: edgeWant, delta: -1, client: wt.Client})
		}
	}
	for k, w := range windows {
		if w.To <= w.From {
			continue
		}
		kind := edgeExcuse
		if w.Client != "" {
			kind = edgePause
		}
		edges = append(edges, liveEdge{at: w.From, kind: kind, delta: +1, client: w.Client, excuse: k}, liveEdge{at: w.To, kind: kind, delta: -1, client: w.Client, excuse: k})
	}
	slices.SortStableFunc(edges, func(a, b liveEdge) int { return cmp.Compare(a.at, b.at) })

	var (
		holders    int
		wanting    = map[string]int{}
		paused     = map[string]int{}
		live       int             // clients that want the lock and are not paused
		waiters    int             // clients that want the lock
		excusing   = map[int]int{} // active global windows
		best, open *Unavailable
		share      map[int]time.Duration // window index -> excused time in the open stretch
		waited     map[string]bool       // clients that wanted the lock in the open stretch
		joined     []string              // clients whose want began at this instant
	)
	isLive := func(c string) bool { return wanting[c] > 0 && paused[c] == 0 }
	for i := 0; i < len(edges); {
		at := edges[i].at
		joined = joined[:0]
		for ; i < len(edges) && edges[i].at == at; i++ {
			e := edges[i]
			if e.kind == edgeWant && e.delta > 0 {
				joined = append(joined, e.client)
			}
			switch e.kind {
			case edgeHold:
				holders += e.delta
			case edgeWant, edgePause:
				wasLive, wasWaiting := isLive(e.client), wanting[e.client] > 0
				if e.kind == edgeWant {
					wanting[e.client] += e.delta
				} else {
					paused[e.client] += e.delta
				}
				if isLive(e.client) != wasLive {
					live += b2i(!wasLive) - b2i(wasLive)
				}
				if (wanting[e.client] > 0) != wasWaiting {
					waiters += b2i(!wasWaiting) - b2i(wasWaiting)
				}
			case edgeExcuse:
				excusing[e.excuse] += e.delta
				if excusing[e.excuse] == 0 {
					delete(excusing, e.excuse)
				}
			}
		}
		unavailable := holders == 0 && waiters > 0
		switch {
		case unavailable && open == nil:
			open = &Unavailable{From: at, To: at}
			share = map[int]time.Duration{}
			waited = map[string]bool{}
		case !unavailable && open != nil:
			open.To = at
			best = better(best, open, windows, share, waited)
			open = nil
		}
		if open == nil {
			continue
		}
		if len(waited) == 0 {
			for c, n := range wanting {
				if n > 0 {
					waited[c] = true
				}
			}
		} else {
			for _, c := range joined {
				waited[c] = true
			}
		}
		next := h.End
		if i < len(edges) {
			next = edges[i].at
		}
		if next <= at {
			continue
		}
		seg := next - at
		open.To = next
		excused := false
		for k := range excusing {
			share[k] += seg
			excused = true
		}
		if live == 0 {
			// Every waiter is paused: the lock keeps nobody live waiting.
			for k, w := range windows {
				if w.Client != "" && paused[w.Client] > 0 && wanting[w.Client] > 0 && w.From <= at && next <= w.To {
					share[k] += seg
				}
			}
			excused = true
		}
		if !excused {
			open.Blamed += seg
		}
	}
	if open != nil {
		best = better(best, open, windows, share, waited)
	}
	if best != nil {
		for _, iv := range h.Intervals {
			if stuck[iv.Client] && iv.Start+maxHold <= best.From && iv.End >= best.To {
				best.Stuck = mergeNames(best.Stuck, []string{iv.Client})
			}
		}
	}
	return best
}

// better keeps the stretch with the most blamed time (the earlier on a
// tie), filling in its excuses when it is the new one.
func better(best, cand *Unavailable, windows []Window, share map[int]time.Duration, waited map[string]bool) *Unavailable {
	if best != nil && cand.Blamed <= best.Blamed {
		return best
	}
	cand.Waiting = cand.Waiting[:0]
	for c := range waited {
		cand.Waiting = append(cand.Waiting, c)
	}
	sort.Strings(cand.Waiting)
	keys := make([]int, 0, len(share))
	for k := range share {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	cand.Excuses = nil
	for _, k := range keys {
		w := windows[k]
		cand.Excuses = append(cand.Excuses, Excuse{Why: w.Why, Client: w.Client, Excused: share[k]})
	}
	return cand
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mergeNames(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
