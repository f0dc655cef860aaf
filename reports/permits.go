package reports

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

// A counting semaphore on Redis keeps its permits in a sorted set named
// after the lock: each holder's token, scored with the time it took the
// permit on its own clock; a client about to acquire first removes the
// entries older than the timeout by its clock (ZREMRANGEBYSCORE), then adds
// its own (ZADD) and keeps it if its rank is under the permits (the
// "fair semaphore" of Redis in Action, 6.3). The permits lane draws each
// entry from the ZADD that made it to the command that removed it, and
// who removed it: a client whose clock runs ahead removes entries whose
// holders still count on them (semaphore-clock-skew). Commands queued in a
// MULTI are applied at its EXEC, as Redis does.

// permitSpan is one entry of a node's permit set.
type permitSpan struct {
	Node, LockValue, Owner string
	Score                  float64 // its holder's clock, in ms since the Unix epoch
	From, To               time.Duration
	End                    string // "released", "removed by c2's cleanup", "removed by c1", "end of run"
	Events                 []int
	// Lease: the score is the end of the permit's lease, not when it was
	// taken (the permit-expiring semaphore, permitscripts.go); Relisted:
	// a blind refresh listed it again after it was removed.
	Lease, Relisted bool
}

type permitTracker struct {
	key    string
	owner  map[string]string // token → client (the mechanism's owner map)
	open   map[string]*permitSpan
	queued map[string][]queuedCmd // node|client → the MULTI's queued commands
	spans  []permitSpan
}

type queuedCmd struct {
	id   int
	args []string
}

func newPermitTracker(key string, owner map[string]string) *permitTracker {
	return &permitTracker{key: key, owner: owner, open: map[string]*permitSpan{}, queued: map[string][]queuedCmd{}}
}

// executed reads command event i that node ran.
func (pt *permitTracker) executed(i int, e *event.Event) {
	f := e.Args
	if len(f) == 0 {
		return
	}
	if pt.script(i, e) {
		return
	}
	q := e.Node + "|" + e.Client
	switch cmd := strings.ToLower(f[0]); {
	case cmd == "multi" || cmd == "discard":
		delete(pt.queued, q)
	case e.Reply == "+QUEUED":
		pt.queued[q] = append(pt.queued[q], queuedCmd{i, f})
	case cmd == "exec":
		for _, c := range pt.queued[q] {
			pt.apply(e.Node, e.Client, c.args, e.At, []int{c.id, i})
		}
		delete(pt.queued, q)
	default:
		pt.apply(e.Node, e.Client, f, e.At, []int{i})
	}
}

func (pt *permitTracker) apply(node, client string, f []string, at time.Duration, ids []int) {
	if len(f) < 2 || f[1] != pt.key {
		return
	}
	end := func(token, why string) {
		p := pt.open[node+"|"+token]
		if p == nil {
			return
		}
		p.To, p.End = at, why
		p.Events = append(p.Events, ids...)
		pt.spans = append(pt.spans, *p)
		delete(pt.open, node+"|"+token)
	}
	switch strings.ToLower(f[0]) {
	case "zadd":
		args := f[2:]
		for len(args) > 0 && strings.ToLower(args[0]) >= "a" && !isNumber(args[0]) {
			args = args[1:] // NX, XX, GT, LT, CH
		}
		for k := 0; k+1 < len(args); k += 2 {
			score, _ := strconv.ParseFloat(args[k], 64)
			tok := args[k+1]
			if p := pt.open[node+"|"+tok]; p != nil {
				p.Score = score
				p.Events = append(p.Events, ids...)
				continue
			}
			pt.open[node+"|"+tok] = &permitSpan{Node: node, LockValue: tok, Owner: pt.owner[tok], Score: score, From: at, Events: slices.Clone(ids)}
		}
	case "zrem":
		for _, tok := range f[2:] {
			why := "released"
			if o := pt.owner[tok]; o != client {
				why = "removed by " + client
			}
			end(tok, why)
		}
	case "zremrangebyscore":
		if len(f) < 4 {
			return
		}
		lo, hi := scoreBound(f[2]), scoreBound(f[3])
		for _, k := range sortedKeysOf(pt.open) {
			p := pt.open[k]
			if p.Node == node && p.Score >= lo && p.Score <= hi {
				why := "removed by " + client + "'s cleanup"
				if p.Owner == client {
					why = "removed by its own holder's cleanup"
				}
				end(p.LockValue, why)
			}
		}
	case "del":
		for _, k := range sortedKeysOf(pt.open) {
			if p := pt.open[k]; p.Node == node {
				end(p.LockValue, "deleted by "+client)
			}
		}
	}
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimPrefix(s, "("), 64)
	return err == nil || s == "-inf" || s == "+inf"
}

// scoreBound reads a ZREMRANGEBYSCORE bound ("-inf", "+inf", "(12" is
// exclusive: a hair inside).
func scoreBound(s string) float64 {
	switch s {
	case "-inf":
		return math.Inf(-1)
	case "+inf", "inf":
		return math.Inf(1)
	}
	v, _ := strconv.ParseFloat(strings.TrimPrefix(s, "("), 64)
	if strings.HasPrefix(s, "(") {
		return math.Nextafter(v, math.Inf(1))
	}
	return v
}

// finish closes the entries still in a set at the end of the run.
func (pt *permitTracker) finish(end time.Duration) []permitSpan {
	for _, k := range sortedKeysOf(pt.open) {
		p := pt.open[k]
		p.To, p.End = end, "end of run"
		pt.spans = append(pt.spans, *p)
	}
	slices.SortStableFunc(pt.spans, func(a, b permitSpan) int { return int(a.From - b.From) })
	return pt.spans
}

// permitLines packs entries into lines: each on the first line free at
// its start.
func permitLines(spans []permitSpan) [][]permitSpan {
	var lines [][]permitSpan
	for _, p := range spans {
		placed := false
		for k := range lines {
			if last := lines[k][len(lines[k])-1]; last.To <= p.From {
				lines[k] = append(lines[k], p)
				placed = true
				break
			}
		}
		if !placed {
			lines = append(lines, []permitSpan{p})
		}
	}
	return lines
}

// stampText reads a score as its holder's clock: seconds since the run's
// epoch (sim.Epoch), as the other times on the page.
func stampText(score float64) string {
	d := time.Duration(score*float64(time.Millisecond)) - time.Duration(sim.Epoch.UnixNano())
	return checker.Sec(d)
}

// drawPermits draws the permit lane in row r.
func (b *tlBuilder) drawPermits(r row) {
	t := b.t
	for i, line := range b.permitLines {
		y := r.y + backendTop + subLineH*float64(i)
		lastEnd := -1e9
		for _, p := range line {
			if !b.visible(p.From, p.To) {
				continue
			}
			x0, x1 := b.xc(p.From), b.xc(p.To)
			owner := p.Owner
			if owner == "" {
				owner = p.LockValue
			}
			title := fmt.Sprintf("%s's entry in %s's permit set %s from %s to %s, stamped %s on its clock; ends: %s", owner, p.Node, b.res.Scenario.Key,
				checker.Sec(p.From), checker.Sec(p.To), stampText(p.Score), p.End)
			if p.Lease {
				title = fmt.Sprintf("%s's permit in %s's set %s:timeout from %s to %s, its lease last set to end at %s on its clock; ends: %s", owner, p.Node, b.res.Scenario.Key,
					checker.Sec(p.From), checker.Sec(p.To), stampText(p.Score), p.End)
				if p.Relisted {
					title += " — listed again by a blind refresh after it was removed"
				}
			}
			stroke, sw := "", 0.0
			if strings.HasPrefix(p.End, "removed by ") && !strings.Contains(p.End, "its own") {
				stroke, sw = witnessRed, 1.5
			}
			t.Plot = append(t.Plot, shape{Kind: "rect", X: x0, Y: y + 1, W: math.Max(x1-x0, 2), H: 13, Fill: b.ownerColor(p.Owner), Opacity: 0.55, Stroke: stroke, SW: sw, Class: "permit", Title: title,
				Events: eventIDs(p.Events), Label: fmt.Sprintf("permit %s %s from=%d to=%d end=%s", p.Node, p.LockValue, p.From, p.To, url.QueryEscape(p.End))})
			text := owner + "'s permit"
			if p.Relisted {
				text += " (re-listed)"
			}
			if stroke != "" {
				text += ", " + p.End
			}
			if w := textWidth(text, 10); x0+3 > lastEnd && x0+3+w < t.X1 {
				t.Plot = append(t.Plot, shape{Kind: "text", X: x0 + 3, Y: y + 11, Text: text, Size: 10, Fill: "#0f172a", Halo: true, Events: eventIDs(p.Events)})
				lastEnd = x0 + 3 + w
			}
		}
	}
}
