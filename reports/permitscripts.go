package reports

import (
	"slices"
	"strconv"
	"strings"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/sim/event"
)

// The permit-expiring semaphore (algorithms/semaphore_expirable.go) keeps
// its permits in a sorted set KEY:timeout, each scored with the end of its
// lease on its holder's clock, and changes it only in Lua scripts: every
// script but the blind refresh first reclaims the entries whose lease
// ended at or before the caller's "now"; an acquire answered 1 adds the
// caller's entry, a checked refresh answered 1 moves its lease end, a
// blind refresh lists it whatever was there (re-listing a permit another
// client reclaimed: swarthy/redis-semaphore #175), a release answered 1
// removes it. The permits lane reads the scripts' arguments from the
// command.executed events, never their replies' wording beyond the 1.

// permitScript is one of the semaphore's scripts, by body: where its
// permit id and its "now" are among the arguments after the keys, and
// whether it reclaims first.
type permitScript struct {
	name         string
	id, now, end int // ARGV positions (from 0); end -1: no lease end
	reclaims     bool
}

var permitScripts = map[string]permitScript{
	algorithms.ScriptPermitAcquire:      {"acquire", 1, 2, 3, true},
	algorithms.ScriptPermitRefresh:      {"refresh", 0, 1, 2, true},
	algorithms.ScriptPermitRefreshBlind: {"blind refresh", 0, 1, 2, false},
	algorithms.ScriptPermitRelease:      {"release", 0, 1, -1, true},
}

// script reads an EVAL of one of the scripts on the lock's keys; false
// for any other command.
func (pt *permitTracker) script(i int, e *event.Event) bool {
	f := e.Args
	if len(f) < 5 || !strings.EqualFold(f[0], "eval") || f[2] != "2" || f[3] != pt.key {
		return false
	}
	sc, ok := permitScripts[f[1]]
	if !ok {
		return false
	}
	argv := f[5:]
	if len(argv) <= max(sc.id, sc.now, sc.end) {
		return false
	}
	node, tok, ok1 := e.Node, argv[sc.id], e.Reply == ":1"
	now, _ := strconv.ParseFloat(argv[sc.now], 64)
	if sc.reclaims {
		for _, k := range sortedKeysOf(pt.open) {
			if p := pt.open[k]; p.Node == node && p.Score <= now {
				why := "removed by " + e.Client + "'s reclaim"
				if p.Owner == e.Client {
					why = "removed by its own holder's reclaim"
				}
				pt.closeSpan(k, e, i, why)
			}
		}
	}
	k := node + "|" + tok
	switch {
	case sc.name == "release" && ok1:
		pt.closeSpan(k, e, i, "released")
	case sc.end >= 0 && (ok1 || sc.name == "blind refresh"):
		score, _ := strconv.ParseFloat(argv[sc.end], 64)
		if p := pt.open[k]; p != nil {
			p.Score = score
			p.Events = append(p.Events, i)
			break
		}
		if sc.name == "refresh" {
			break // a checked refresh of an entry that is gone answers 0
		}
		pt.open[k] = &permitSpan{Node: node, LockValue: tok, Owner: pt.owner[tok], Score: score, From: e.At, Events: []int{i},
			Lease: true, Relisted: sc.name == "blind refresh"}
	}
	return true
}

// closeSpan ends the open entry k at e (event i).
func (pt *permitTracker) closeSpan(k string, e *event.Event, i int, why string) {
	p := pt.open[k]
	if p == nil {
		return
	}
	p.To, p.End = e.At, why
	if !slices.Contains(p.Events, i) {
		p.Events = append(p.Events, i)
	}
	pt.spans = append(pt.spans, *p)
	delete(pt.open, k)
}
