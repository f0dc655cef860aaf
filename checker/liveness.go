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
// keeps the lock out of reach of some waiters. An excuse is tied to the
// waiters it excuses, never to everybody (docs/design.md, "What a violation
// is"): with Client set the window is that client's own pause (the client
// is no live waiter during it, and nobody else is excused by it);
// otherwise Waiters names the clients the fault separates from the lock (a
// partition that leaves them short of the nodes a grant needs, a node's
// downtime for those who need the node, a drop or delay rule while it can
// still act on their messages). A window that names nobody excuses nothing.
type Window struct {
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
	// Client, when set, names the paused client the window is about.
	Client string `json:"client,omitempty"`
	// Waiters are the clients this fault keeps from the lock.
	Waiters []string `json:"waiters,omitempty"`
	// Why says what the fault was, for the witness ("partition c1|n1",
	// "paused").
	Why string `json:"why,omitempty"`
}

// excuses reports whether the window excuses client c's waiting.
func (w Window) excuses(c string) bool {
	return w.Client == c || slices.Contains(w.Waiters, c)
}

// Excuse is one fault's share of an unavailable stretch: which fault
// (Why), whom it excused (Client for a pause, Waiters otherwise), over
// which interval it acted (From, To), and how much of the stretch it
// covered (Excused).
type Excuse struct {
	Why     string        `json:"why"`
	Client  string        `json:"client,omitempty"`
	Waiters []string      `json:"waiters,omitempty"`
	From    time.Duration `json:"from_ns"`
	To      time.Duration `json:"to_ns"`
	Excused time.Duration `json:"excused_ns"`
}

func (e Excuse) String() string {
	d := e.Excused.Round(time.Millisecond)
	if e.Client != "" {
		return fmt.Sprintf("%s %s %s of this gap", e.Client, e.Why, d)
	}
	return fmt.Sprintf("%s %s (kept %s from the lock during [%s, %s])", e.Why, d, strings.Join(e.Waiters, ","), Sec(e.From), Sec(e.To))
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
}

const (
	edgeHold = iota
	edgeWant
	edgePause
	edgeExcuse
)

// waiterState is one client's share of the sweep: how many of its wants,
// pauses and excusing windows are open at the current instant.
type waiterState struct{ wanting, paused, excused int }

func (s waiterState) waiting() bool { return s.wanting > 0 }

// blamable: the client wants the lock, is not paused, and no fault keeps
// it from the lock, so its waiting counts against the lock.
func (s waiterState) blamable() bool { return s.wanting > 0 && s.paused == 0 && s.excused == 0 }

// span is a stretch of true time [From, To).
type span struct{ From, To time.Duration }

// longestUnavailable sweeps true time and returns the stretch with the
// most unexcused unavailability: a maximal stretch during which nobody
// held the lock and some client wanted it. Inside it, time counts against
// the lock while some waiter is blamable (live, and no window excuses it);
// it is excused while every waiter is paused or kept from the lock by a
// fault that names it.
//
// One sort of the 2(holds+wants+window waiters) edges and one pass over
// them, each edge touching only its own client's state: O(n log n). The
// excuses are worked out once, for the winning stretch, from its excused
// segments.
func longestUnavailable(h History, maxHold time.Duration, windows []Window) *Unavailable {
	edges, stuck := liveEdges(h, maxHold, windows)
	s := &liveSweep{states: map[string]*waiterState{}}
	for i := 0; i < len(edges); {
		at := edges[i].at
		i = s.apply(edges, i)
		next := h.End
		if i < len(edges) {
			next = edges[i].at
		}
		s.advance(at, next)
	}
	if s.open != nil {
		s.closeStretch()
	}
	best := s.best
	if best == nil {
		return nil
	}
	for c := range s.bestWaited {
		best.Waiting = append(best.Waiting, c)
	}
	sort.Strings(best.Waiting)
	best.Excuses = excusesOf(best, windows, s.bestSegs, s.bestWaited)
	for _, iv := range h.Intervals {
		if stuck[iv.Client] && iv.Start+maxHold <= best.From && iv.End >= best.To {
			best.Stuck = mergeNames(best.Stuck, []string{iv.Client})
		}
	}
	return best
}

// liveSweep is longestUnavailable's state between one instant of the sweep
// and the next.
type liveSweep struct {
	holders, waiters, blamable int
	states                     map[string]*waiterState
	best, open                 *Unavailable
	segs, bestSegs             []span          // excused segments of the open and the best stretch
	waited, bestWaited         map[string]bool // clients that wanted the lock in the stretch
	joined                     []string        // clients whose want began at this instant
}

func (s *liveSweep) stateOf(c string) *waiterState {
	st := s.states[c]
	if st == nil {
		st = &waiterState{}
		s.states[c] = st
	}
	return st
}

// closeStretch ends the open stretch, keeping it if it is the worst yet.
func (s *liveSweep) closeStretch() {
	if s.best == nil || s.open.Blamed > s.best.Blamed {
		s.best, s.bestSegs, s.bestWaited = s.open, s.segs, s.waited
	}
	s.open, s.segs, s.waited = nil, nil, nil
}

// apply takes in every edge at edges[i]'s instant, each touching only its
// own client's state, and returns the index of the first edge after it.
func (s *liveSweep) apply(edges []liveEdge, i int) int {
	at := edges[i].at
	s.joined = s.joined[:0]
	for ; i < len(edges) && edges[i].at == at; i++ {
		e := edges[i]
		if e.kind == edgeHold {
			s.holders += e.delta
			continue
		}
		st := s.stateOf(e.client)
		wasWaiting, wasBlamable := st.waiting(), st.blamable()
		switch e.kind {
		case edgeWant:
			st.wanting += e.delta
			if e.delta > 0 {
				s.joined = append(s.joined, e.client)
			}
		case edgePause:
			st.paused += e.delta
		case edgeExcuse:
			st.excused += e.delta
		}
		s.waiters += b2i(st.waiting()) - b2i(wasWaiting)
		s.blamable += b2i(st.blamable()) - b2i(wasBlamable)
	}
	return i
}

// advance opens or closes a stretch at instant at, and counts the time up
// to the next instant against the lock (a blamable waiter) or as excused.
func (s *liveSweep) advance(at, next time.Duration) {
	unavailable := s.holders == 0 && s.waiters > 0
	switch {
	case unavailable && s.open == nil:
		s.open = &Unavailable{From: at, To: at}
		s.waited = map[string]bool{}
		for c, st := range s.states {
			if st.waiting() {
				s.waited[c] = true
			}
		}
	case !unavailable && s.open != nil:
		s.open.To = at
		s.closeStretch()
	}
	if s.open == nil {
		return
	}
	for _, c := range s.joined {
		s.waited[c] = true
	}
	if next <= at {
		return
	}
	s.open.To = next
	switch {
	case s.blamable > 0:
		s.open.Blamed += next - at
	case len(s.segs) > 0 && s.segs[len(s.segs)-1].To == at:
		s.segs[len(s.segs)-1].To = next
	default:
		s.segs = append(s.segs, span{at, next})
	}
}

// liveEdges lists the sweep's edges in time order: holds (cut at maxHold,
// whose holders it returns as stuck), wants, pauses, and one pair per
// waiter a fault window excuses.
func liveEdges(h History, maxHold time.Duration, windows []Window) ([]liveEdge, map[string]bool) {
	edges := make([]liveEdge, 0, 2*(len(h.Intervals)+len(h.Wants)+len(windows)))
	stuck := map[string]bool{}
	pair := func(from, to time.Duration, kind int, client string) {
		edges = append(edges, liveEdge{at: from, kind: kind, delta: +1, client: client}, liveEdge{at: to, kind: kind, delta: -1, client: client})
	}
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
		pair(iv.Start, end, edgeHold, iv.Client)
	}
	for _, wt := range h.Wants {
		if wt.To > wt.From {
			pair(wt.From, wt.To, edgeWant, wt.Client)
		}
	}
	for _, w := range windows {
		if w.To <= w.From {
			continue
		}
		if w.Client != "" {
			pair(w.From, w.To, edgePause, w.Client)
		}
		for _, c := range w.Waiters {
			pair(w.From, w.To, edgeExcuse, c)
		}
	}
	// All edges of one instant are applied before the instant is judged,
	// so their order within it does not matter.
	slices.SortStableFunc(edges, func(a, b liveEdge) int { return cmp.Compare(a.at, b.at) })
	return edges, stuck
}

// excusesOf gives each window that excuses a waiter of the stretch its
// share: the part of the stretch's excused segments it covers. Prefix sums
// over the segments make each share a pair of binary searches.
func excusesOf(u *Unavailable, windows []Window, segs []span, waited map[string]bool) []Excuse {
	cum := make([]time.Duration, len(segs)+1)
	for i, s := range segs {
		cum[i+1] = cum[i] + s.To - s.From
	}
	// upTo is the excused time of the stretch before x.
	upTo := func(x time.Duration) time.Duration {
		j := sort.Search(len(segs), func(j int) bool { return segs[j].To > x })
		if j < len(segs) && x > segs[j].From {
			return cum[j] + x - segs[j].From
		}
		return cum[j]
	}
	var out []Excuse
	for _, w := range windows {
		if w.To <= u.From || w.From >= u.To || !excusesSome(w, waited) {
			continue
		}
		share := upTo(min(w.To, u.To)) - upTo(max(w.From, u.From))
		if share <= 0 {
			continue
		}
		out = append(out, Excuse{Why: w.Why, Client: w.Client, Waiters: w.Waiters, From: w.From, To: w.To, Excused: share})
	}
	return out
}

func excusesSome(w Window, waited map[string]bool) bool {
	if waited[w.Client] {
		return true
	}
	for _, c := range w.Waiters {
		if waited[c] {
			return true
		}
	}
	return false
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
