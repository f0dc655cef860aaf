package checker

import (
	"fmt"
	"io"
	"sort"
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

// Overlap witnesses a mutual-exclusion violation: two clients that both
// believed they held the lock during [From, To].
type Overlap struct {
	First  Interval      `json:"first"`
	Second Interval      `json:"second"`
	From   time.Duration `json:"from_ns"`
	To     time.Duration `json:"to_ns"`
}

func (o *Overlap) String() string {
	return fmt.Sprintf("%s held [%s, %s] (%s) and %s held [%s, %s] (%s): both held during [%s, %s]",
		o.First.Client, Sec(o.First.Start), Sec(o.First.End), o.First.EndReason,
		o.Second.Client, Sec(o.Second.Start), Sec(o.Second.End), o.Second.EndReason,
		Sec(o.From), Sec(o.To))
}

// ResourceWitness explains a resource violation.
type ResourceWitness struct {
	// Kind is "lost update" or "duplicate token".
	Kind string `json:"kind"`
	// Write is the offending accepted write; Overwritten is the accepted write
	// whose effect it silently undid (lost update) or that carried the same
	// token (duplicate token).
	Write       Access `json:"write"`
	Overwritten Access `json:"overwritten"`
	Expected    int64  `json:"expected_final"`
	Final       int64  `json:"final"`
}

func (r *ResourceWitness) String() string {
	switch r.Kind {
	case "duplicate token":
		return fmt.Sprintf("%s's write at %s and %s's write at %s were both accepted with fencing token %d",
			r.Overwritten.Client, Sec(r.Overwritten.At), r.Write.Client, Sec(r.Write.At), r.Write.Fence)
	default:
		return fmt.Sprintf("lost update: %s wrote %d at %s based on a read of %d, overwriting %s's write of %d at %s (final value %d, a serial order gives %d)",
			r.Write.Client, r.Write.Value, Sec(r.Write.At), r.Write.Based,
			r.Overwritten.Client, r.Overwritten.Value, Sec(r.Overwritten.At), r.Final, r.Expected)
	}
}

// Unavailable witnesses a liveness violation: nobody held the lock during
// [From, To] although Waiting wanted it.
type Unavailable struct {
	From    time.Duration `json:"from_ns"`
	To      time.Duration `json:"to_ns"`
	Waiting []string      `json:"waiting"`
	Bound   time.Duration `json:"bound_ns"`
	// Stuck names a holder that had held the lock longer than MaxHold during
	// the stretch (a hung worker whose watchdog keeps renewing).
	Stuck []string `json:"stuck,omitempty"`
}

func (u *Unavailable) String() string {
	who := "nobody held it"
	if len(u.Stuck) > 0 {
		who = fmt.Sprintf("%v held it without letting go", u.Stuck)
	}
	return fmt.Sprintf("lock unavailable for %s (bound %s) during [%s, %s] while %v waited and %s",
		(u.To - u.From).Round(time.Millisecond), u.Bound, Sec(u.From), Sec(u.To), u.Waiting, who)
}

// Window is a stretch of true time.
type Window struct {
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
}

// blame is the part of [from, to] outside every excused window.
func blame(from, to time.Duration, excused []Window) time.Duration {
	total := to - from
	// Merge the excused windows clipped to [from, to].
	var ws []Window
	for _, w := range excused {
		a, b := max(w.From, from), min(w.To, to)
		if a < b {
			ws = append(ws, Window{a, b})
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].From < ws[j].From })
	var covered time.Duration
	var cur *Window
	for i := range ws {
		switch {
		case cur == nil:
			cur = &ws[i]
		case ws[i].From <= cur.To:
			cur.To = max(cur.To, ws[i].To)
		default:
			covered += cur.To - cur.From
			cur = &ws[i]
		}
	}
	if cur != nil {
		covered += cur.To - cur.From
	}
	return total - covered
}

// Witness collects the evidence for each violated property.
type Witness struct {
	MutualExclusion *Overlap         `json:"mutual_exclusion,omitempty"`
	Resource        *ResourceWitness `json:"resource,omitempty"`
	Liveness        *Unavailable     `json:"liveness,omitempty"`
}

// Metrics are figures worth reporting beside verdicts.
type Metrics struct {
	Acquisitions   int           `json:"acquisitions"`
	Writes         int           `json:"writes"`
	RejectedWrites int           `json:"rejected_writes"`
	FinalValue     int64         `json:"final_value"`
	Unavailable    time.Duration `json:"unavailable_ns"`
}

// Options tunes the checks.
type Options struct {
	// LivenessBound is the longest the lock may stay unavailable while
	// wanted; zero disables the liveness check (reported ok).
	LivenessBound time.Duration
	// Excused are windows of true time during which the environment alone
	// makes the lock unavailable (a partition, a stretch of lost messages, a
	// node down until its restart). Unavailability inside them does not
	// count against LivenessBound: a lock must recover once faults heal,
	// not work through them.
	Excused []Window
	// MaxHold, when set, is the longest a holder may keep the lock while
	// others wait; past it the lock counts as unavailable (a stuck holder).
	MaxHold time.Duration
	// Timeout bounds the porcupine search; past it the mutual-exclusion
	// verdict is "unknown" unless the direct overlap scan found a witness.
	Timeout time.Duration
}

// Report is the checker's output for one history.
type Report struct {
	Verdict Verdict `json:"verdict"`
	Witness Witness `json:"witness"`
	Metrics Metrics `json:"metrics"`
	// Porcupine is porcupine's own result ("Ok", "Illegal", "Unknown").
	Porcupine string `json:"porcupine"`

	ops  []porcupine.Operation
	info porcupine.LinearizationInfo
}

// Check runs every check over h.
func Check(h History, opt Options) *Report {
	if opt.Timeout == 0 {
		opt.Timeout = 5 * time.Second
	}
	r := &Report{}
	r.Metrics.Acquisitions = len(h.Intervals)

	// Mutual exclusion: porcupine decides, the sweep names the pair.
	r.ops = mutexOperations(h.Intervals)
	res, info := porcupine.CheckOperationsVerbose(mutexModel, r.ops, opt.Timeout)
	r.info = info
	r.Porcupine = string(res)
	r.Witness.MutualExclusion = firstOverlap(h.Intervals)
	switch {
	case res == porcupine.Illegal || r.Witness.MutualExclusion != nil:
		r.Verdict.MutualExclusion = Violated
	case res == porcupine.Ok:
		r.Verdict.MutualExclusion = OK
	default:
		r.Verdict.MutualExclusion = Unknown
	}

	r.Verdict.Resource, r.Witness.Resource = checkResource(h, &r.Metrics)

	r.Verdict.Liveness = OK
	if gap := longestUnavailable(h, opt.MaxHold, opt.Excused); gap != nil {
		r.Metrics.Unavailable = gap.To - gap.From
		if opt.LivenessBound > 0 && blame(gap.From, gap.To, opt.Excused) > opt.LivenessBound {
			gap.Bound = opt.LivenessBound
			r.Verdict.Liveness = Violated
			r.Witness.Liveness = gap
		}
	}
	return r
}

// Visualize writes porcupine's self-contained HTML view of the mutex history.
func (r *Report) Visualize(w io.Writer) error {
	return porcupine.Visualize(mutexModel, r.info, w)
}

// firstOverlap scans the intervals in start order and returns the first pair
// that overlaps in true time, or nil.
func firstOverlap(in []Interval) *Overlap {
	iv := append([]Interval(nil), in...)
	sort.SliceStable(iv, func(i, j int) bool { return iv[i].Start < iv[j].Start })
	for i := range iv {
		for j := i + 1; j < len(iv); j++ {
			a, b := iv[i], iv[j]
			if b.Start >= a.End {
				break
			}
			if a.Client == b.Client || b.End <= b.Start || a.End <= a.Start {
				continue
			}
			to := min(a.End, b.End)
			return &Overlap{First: a, Second: b, From: b.Start, To: to}
		}
	}
	return nil
}

func checkResource(h History, m *Metrics) (Status, *ResourceWitness) {
	cur := h.Initial
	var last *Access
	byFence := map[int64]Access{}
	var witness *ResourceWitness
	writes := 0
	for i := range h.Accesses {
		a := h.Accesses[i]
		if a.Kind != "write" {
			continue
		}
		if !a.Accepted {
			m.RejectedWrites++
			continue
		}
		writes++
		m.Writes++
		if witness == nil && a.Fence != 0 {
			if prev, ok := byFence[a.Fence]; ok && prev.Client != a.Client {
				witness = &ResourceWitness{Kind: "duplicate token", Write: a, Overwritten: prev}
			}
			byFence[a.Fence] = a
		}
		if witness == nil && a.Based != cur && last != nil {
			witness = &ResourceWitness{Kind: "lost update", Write: a, Overwritten: *last}
		}
		cur = a.Value
		last = &h.Accesses[i]
	}
	m.FinalValue = cur
	if witness == nil {
		return OK, nil
	}
	// Every accepted write sells one item, so a serial order ends at
	// Initial - writes.
	witness.Final = cur
	witness.Expected = h.Initial - int64(writes)
	return Violated, witness
}

// longestUnavailable sweeps true time and returns the longest stretch during
// which at least one client wanted the lock and nobody held it.
func longestUnavailable(h History, maxHold time.Duration, excused []Window) *Unavailable {
	type edge struct {
		at     time.Duration
		delta  int // +1 start, -1 end
		isHold bool
		client string
	}
	var edges []edge
	stuck := map[string]bool{}
	for _, iv := range h.Intervals {
		end := iv.End
		if maxHold > 0 && end-iv.Start > maxHold {
			// For liveness the holder stops counting after MaxHold.
			end = iv.Start + maxHold
			stuck[iv.Client] = true
		}
		edges = append(edges, edge{iv.Start, +1, true, iv.Client}, edge{end, -1, true, iv.Client})
	}
	for _, wt := range h.Wants {
		edges = append(edges, edge{wt.From, +1, false, wt.Client}, edge{wt.To, -1, false, wt.Client})
	}
	sort.SliceStable(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // ends before starts at the same instant
	})
	holders, wanting := 0, map[string]int{}
	var best *Unavailable
	var open *Unavailable
	for _, e := range edges {
		if open != nil {
			open.To = e.at
		}
		if e.isHold {
			holders += e.delta
		} else {
			wanting[e.client] += e.delta
		}
		waiting := waitingClients(wanting)
		unavailable := holders == 0 && len(waiting) > 0
		switch {
		case unavailable && open == nil:
			open = &Unavailable{From: e.at, To: e.at, Waiting: waiting}
		case unavailable && open != nil:
			open.Waiting = mergeNames(open.Waiting, waiting)
		case !unavailable && open != nil:
			if best == nil || blame(open.From, open.To, excused) > blame(best.From, best.To, excused) {
				best = open
			}
			open = nil
		}
	}
	if open != nil && (best == nil || blame(open.From, open.To, excused) > blame(best.From, best.To, excused)) {
		best = open
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

func waitingClients(m map[string]int) []string {
	var out []string
	for c, n := range m {
		if n > 0 {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
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

// Sec renders a true time in seconds for witnesses.
func Sec(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }
