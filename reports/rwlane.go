package reports

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/sim/event"
)

// A reader-writer lock on Redis keeps its holders in one hash
// (algorithms/rwlock.go, after Redisson's RReadWriteLock): "mode" is read
// or write and each holder's token counts its holds; every hold refreshes
// the whole hash's expiry. The readers/writer lane draws, per node, each
// token's hold from the script that granted it (the node ran the read or
// write script and answered 1) to the release script that gave its last
// hold back, or the hash's expiry on the node (key.expired) — the moment a
// paused reader's hold is gone on the server while it still reads.

// rwSpan is one holder's stay in a node's reader-writer hash.
type rwSpan struct {
	Node, LockValue, Owner, Mode string
	Count                        int
	From, To                     time.Duration
	End                          string // "released", "expired", "end of run"
	Events                       []int
}

type rwTracker struct {
	key   string
	owner map[string]string
	open  map[string]*rwSpan // node|token
	spans []rwSpan
}

func newRWTracker(key string, owner map[string]string) *rwTracker {
	return &rwTracker{key: key, owner: owner, open: map[string]*rwSpan{}}
}

// event reads event i of the run.
func (rt *rwTracker) event(i int, e *event.Event) {
	switch {
	case e.Kind == event.KeyExpired && e.Key == rt.key:
		rt.endAll(e.Node, i, e.At, "expired")
	case e.Kind == event.CommandExecuted && len(e.Args) >= 4 && strings.EqualFold(e.Args[0], "eval"):
		rt.script(i, e)
	}
}

func (rt *rwTracker) script(i int, e *event.Event) {
	body, keys := e.Args[1], e.Args[2]
	if e.Args[3] != rt.key || e.Reply != ":1" {
		return
	}
	switch body {
	case algorithms.ScriptRWRead, algorithms.ScriptRWWrite:
		if keys != "2" || len(e.Args) < 7 {
			return
		}
		tok, mode := e.Args[6], "read"
		if body == algorithms.ScriptRWWrite {
			mode = "write"
		}
		k := e.Node + "|" + tok
		if s := rt.open[k]; s != nil {
			s.Count++
			s.Events = append(s.Events, i)
			return
		}
		rt.open[k] = &rwSpan{Node: e.Node, LockValue: tok, Owner: rt.owner[tok], Mode: mode, Count: 1, From: e.At, Events: []int{i}}
	case algorithms.ScriptRWRelease:
		if keys != "1" || len(e.Args) < 5 {
			return
		}
		k := e.Node + "|" + e.Args[4]
		s := rt.open[k]
		if s == nil {
			return
		}
		s.Count--
		s.Events = append(s.Events, i)
		if s.Count <= 0 {
			rt.close(k, e.At, "released")
		}
	}
}

func (rt *rwTracker) close(k string, at time.Duration, why string) {
	s := rt.open[k]
	s.To, s.End = at, why
	rt.spans = append(rt.spans, *s)
	delete(rt.open, k)
}

func (rt *rwTracker) endAll(node string, i int, at time.Duration, why string) {
	for _, k := range sortedKeysOf(rt.open) {
		if s := rt.open[k]; s.Node == node {
			s.Events = append(s.Events, i)
			rt.close(k, at, why)
		}
	}
}

func (rt *rwTracker) finish(end time.Duration) []rwSpan {
	for _, k := range sortedKeysOf(rt.open) {
		rt.close(k, end, "end of run")
	}
	slices.SortStableFunc(rt.spans, func(a, b rwSpan) int { return int(a.From - b.From) })
	return rt.spans
}

// rwLines packs holds into lines, each on the first line free at its
// start.
func rwLines(spans []rwSpan) [][]rwSpan {
	var lines [][]rwSpan
	for _, s := range spans {
		k := slices.IndexFunc(lines, func(l []rwSpan) bool { return l[len(l)-1].To <= s.From })
		if k < 0 {
			lines = append(lines, []rwSpan{s})
			continue
		}
		lines[k] = append(lines[k], s)
	}
	return lines
}

// drawRW draws the readers/writer lane in row r.
func (b *tlBuilder) drawRW(r row) {
	t := b.t
	for i, line := range b.rwLines {
		y := r.y + backendTop + subLineH*float64(i)
		lastEnd := -1e9
		for _, s := range line {
			if !b.visible(s.From, s.To) {
				continue
			}
			x0, x1 := b.xc(s.From), b.xc(s.To)
			owner := s.Owner
			if owner == "" {
				owner = s.LockValue
			}
			verb := map[string]string{"read": "reads", "write": "writes"}[s.Mode]
			title := fmt.Sprintf("on %s, %s %s (a %s's hold in the hash %s) from %s to %s; ends: %s", s.Node, owner, verb, modeNoun(s.Mode), b.res.Scenario.Key,
				checker.Sec(s.From), checker.Sec(s.To), s.End)
			sh := shape{Kind: "rect", X: x0, Y: y + 1, W: math.Max(x1-x0, 2), H: 13, Fill: b.ownerColor(s.Owner), Opacity: 0.75, Class: "rw-hold", Title: title,
				Events: eventIDs(s.Events), Label: fmt.Sprintf("rwhold %s %s %s from=%d to=%d end=%s", s.Node, s.LockValue, s.Mode, s.From, s.To, url.QueryEscape(s.End))}
			if s.Mode == "read" {
				sh.Opacity = 0.45
			}
			t.Plot = append(t.Plot, sh)
			text := owner + " " + verb + " (on " + s.Node + ")"
			if s.End == "expired" {
				text += ", expired on the node"
			}
			if w := textWidth(text, 10); x0+3 > lastEnd && x0+3+w < t.X1 {
				t.Plot = append(t.Plot, shape{Kind: "text", X: x0 + 3, Y: y + 11, Text: text, Size: 10, Fill: "#0f172a", Halo: true, Events: eventIDs(s.Events)})
				lastEnd = x0 + 3 + w
			}
		}
	}
}
