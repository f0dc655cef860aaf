package reports

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/event"
)

// The permit-expiring semaphore's entries, re-derived from its scripts'
// executions (algorithms/semaphore_expirable.go): ARGV after the two keys
// is (permits, id, now, lease end) for an acquire, (id, now, lease end)
// for a refresh, checked or blind, and (id, now) for a release; every
// script but the blind refresh removes the entries whose lease end is at
// or before its now.

// permitEval is one execution of a semaphore script: which, the permit
// id, its now and lease end (NaN: none), and whether the node answered 1.
type permitEval struct {
	script   string
	id       string
	now, end float64
	ok       bool
}

func readPermitEval(res *runner.Result, e event.Event) (permitEval, bool) {
	if e.Kind != event.CommandExecuted || len(e.Args) < 6 || !strings.EqualFold(e.Args[0], "eval") || e.Args[3] != res.Scenario.Key {
		return permitEval{}, false
	}
	a := e.Args[5:]
	num := func(k int) float64 {
		if k >= len(a) {
			return -1
		}
		v, _ := strconv.ParseFloat(a[k], 64)
		return v
	}
	p := permitEval{ok: e.Reply == ":1", end: -1}
	switch e.Args[1] {
	case algorithms.ScriptPermitAcquire:
		p.script, p.id, p.now, p.end = "acquire", a[1], num(2), num(3)
	case algorithms.ScriptPermitRefresh:
		p.script, p.id, p.now, p.end = "refresh", a[0], num(1), num(2)
	case algorithms.ScriptPermitRefreshBlind:
		p.script, p.id, p.now, p.end = "blind", a[0], num(1), num(2)
	case algorithms.ScriptPermitRelease:
		p.script, p.id, p.now = "release", a[0], num(1)
	default:
		return permitEval{}, false
	}
	return p, true
}

// scriptPermitClaim: "permit NODE ID from= to= end=" begins with an
// acquire of ID answered 1, or a blind refresh of it, on NODE at from; its
// lease end is the last one an acquire or refresh set; no script that
// reclaims ran between its ends with a now past that lease end; it ends
// with the release of ID answered 1 ("released"), a reclaiming script of
// the client named whose now is at or past the lease end ("removed by
// C's reclaim", "…its own holder's reclaim"), or the run's end.
func scriptPermitClaim(res *runner.Result, label string) []string {
	words, kv := labelFields(label)
	node, id := words[1], words[2]
	from, _ := strconv.ParseInt(kv["from"], 10, 64)
	to, _ := strconv.ParseInt(kv["to"], 10, 64)
	why, _ := url.QueryUnescape(kv["end"])
	errf := func(format string, args ...any) []string {
		return []string{fmt.Sprintf("%q: ", label) + fmt.Sprintf(format, args...)}
	}
	lease, began := -1.0, false
	holder := ""
	for _, e := range res.Events {
		if e.Node != node || e.At < time.Duration(from) || e.At > time.Duration(to) {
			continue
		}
		p, ok := readPermitEval(res, e)
		if !ok {
			continue
		}
		if e.At == time.Duration(from) && p.id == id && (p.script == "acquire" && p.ok || p.script == "blind") {
			began, lease, holder = true, p.end, e.Client
			continue
		}
		if !began {
			continue
		}
		reclaims := p.script != "blind" && p.now >= lease
		if e.At < time.Duration(to) && reclaims {
			return errf("drawn across %s's %s at %v, whose now %.0f is past its lease end %.0f", e.Client, p.script, e.At, p.now, lease)
		}
		if e.At == time.Duration(to) {
			switch {
			case why == "released" && p.script == "release" && p.id == id && p.ok,
				why == "removed by "+e.Client+"'s reclaim" && reclaims && e.Client != holder,
				why == "removed by its own holder's reclaim" && reclaims && e.Client == holder:
				return nil
			}
		}
		if p.id == id && p.end >= 0 && (p.ok || p.script == "blind") {
			lease = p.end
		}
	}
	if !began {
		return errf("no acquire of %s answered 1, nor blind refresh, on %s at %d ns", id, node, from)
	}
	if why == "end of run" && time.Duration(to) == res.End {
		return nil
	}
	return errf("no script ends it as %q at %d ns", why, to)
}

// scriptPermitsDrawn: every acquire answered 1 and every blind refresh of
// the semaphore is in a drawn entry (named in its data-events).
func scriptPermitsDrawn(res *runner.Result, named map[int]bool) []string {
	var errs []string
	for i, e := range res.Events {
		if p, ok := readPermitEval(res, e); ok && (p.script == "acquire" && p.ok || p.script == "blind") && !named[i] {
			errs = append(errs, fmt.Sprintf("%s's %s of permit %s at %v (event %d) is in no drawn entry", e.Client, p.script, p.id, e.At, i))
		}
	}
	return errs
}

// namesScript: one of the events ids is a semaphore script's execution.
func namesScript(res *runner.Result, ids []int) bool {
	return slices.ContainsFunc(ids, func(id int) bool { _, ok := readPermitEval(res, res.Events[id]); return ok })
}

// The lesson of swarthy/redis-semaphore #175 on the permits lane: c1's
// permit is reclaimed by c2 while c1 is paused, and c1's blind refresh
// lists it again; with the checked refresh it is not listed again.
func TestPermitExpirableSemaphoreLane(t *testing.T) {
	for _, r := range catalogueMechanisms(t) {
		if r.id != "semaphore-refresh-after-expiry" && r.id != "semaphore-refresh-after-expiry-fixed" {
			continue
		}
		tl := buildTimelineMech(r.res, r.m, "t-", 0, r.res.End, false)
		var got []string
		for _, s := range allShapes(tl) {
			if strings.HasPrefix(s.Label, "permit ") {
				_, kv := labelFields(s.Label)
				why, _ := url.QueryUnescape(kv["end"])
				got = append(got, fmt.Sprintf("%s: %s", strings.SplitN(s.Title, "'", 2)[0], why))
			}
			if s.Class == "permit" && strings.Contains(s.Title, "blind refresh") {
				got = append(got, "re-listed")
			}
		}
		t.Logf("%s: %v", r.id, got)
		reclaimed := slices.Contains(got, "c1: removed by c2's reclaim")
		relisted := slices.Contains(got, "re-listed")
		if !reclaimed || relisted != (r.id == "semaphore-refresh-after-expiry") {
			t.Errorf("%s: permits drawn %v; want c1's reclaimed by c2 and, with the blind refresh only, listed again", r.id, got)
		}
	}
}

// pooledClientAt re-derives, from the pooler's db.pool.mapped events, the
// client a backend served at t: the client of its last assignment at or
// before t, unless released or closed since (a release at the instant of
// an assignment came before it: one instant's events are in text order).
func pooledClientAt(res *runner.Result, backend string, t time.Duration) string {
	who := ""
	var at time.Duration
	assignedAt := false // an assignment at instant at
	for _, e := range res.Events {
		if e.At > t {
			break
		}
		if e.Kind != event.DBPoolMapped || e.Session != backend {
			continue
		}
		if e.At != at {
			at, assignedAt = e.At, false
		}
		switch e.Reason {
		case "assigned":
			who, assignedAt = e.Client, true
		case "released", "closed":
			if !assignedAt {
				who = ""
			}
		}
	}
	return who
}

// poolMapClaim: "poolmap BACKEND CONN from= to= end=" begins with the
// pooler's assignment of BACKEND to CONN at from and ends with its
// release or close of it at to (or the run's end); no other assignment
// of BACKEND comes between. It returns the assignments it names.
func poolMapClaim(res *runner.Result, label, evs string) ([]int, []string) {
	words, kv := labelFields(label)
	backend, conn := words[1], words[2]
	from, _ := strconv.ParseInt(kv["from"], 10, 64)
	to, _ := strconv.ParseInt(kv["to"], 10, 64)
	why, _ := url.QueryUnescape(kv["end"])
	ids, err := parseIDs(evs)
	if err != nil {
		return nil, []string{err.Error()}
	}
	errf := func(format string, args ...any) []string {
		return []string{fmt.Sprintf("%q: ", label) + fmt.Sprintf(format, args...)}
	}
	a := res.Events[ids[0]]
	if a.Kind != event.DBPoolMapped || a.Reason != "assigned" || a.Session != backend || a.Conn != conn || int64(a.At) != from {
		return nil, errf("event %d (%s %s) is not the assignment of %s to %s at %d ns", ids[0], a.Kind, a.Reason, backend, conn, from)
	}
	end := time.Duration(to)
	if to < 0 {
		end = res.End
	}
	for _, e := range res.Events {
		if e.Kind == event.DBPoolMapped && e.Session == backend && e.Reason == "assigned" && e.At > a.At && e.At < end {
			return nil, errf("%s assigned to %s at %v, inside it", backend, e.Conn, e.At)
		}
	}
	last := res.Events[ids[len(ids)-1]]
	switch {
	case why == "end of run" && to < 0:
	case last.Kind == event.DBPoolMapped && last.Session == backend && last.Conn == conn && last.Reason == why && int64(last.At) == to:
	default:
		return nil, errf("no %s of %s by %s at %d ns ends it", why, backend, conn, to)
	}
	return ids[:1], nil
}
