package reports

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/event"
)

// backendHoldClaim re-derives one backend's hold of a database lock: it
// begins at a grant to that connection, counts the grants and releases
// between its ends, ends as its end says (the release that balances the
// grants, a statement that frees every lock of the session, the
// transaction's end, the session's end, or never) with that event among
// the ones it names, is not drawn held past a statement that freed every
// session lock of its backend, and says for how long no client held the
// lock. It returns the grants counted.
func backendHoldClaim(res *runner.Result, s shape, errs *[]string) int {
	label := s.Label
	errf := func(format string, args ...any) {
		*errs = append(*errs, fmt.Sprintf("%q: ", label)+fmt.Sprintf(format, args...))
	}
	words, kv := labelFields(label)
	conn, key := words[1], words[2]
	from, _ := strconv.ParseInt(kv["from"], 10, 64)
	to, _ := strconv.ParseInt(kv["to"], 10, 64)
	end := time.Duration(to)
	if to < 0 {
		end = res.End
	}
	why, _ := url.QueryUnescape(kv["end"])
	named, _ := parseIDs(s.Events)
	grants, releases := 0, 0
	forWho := strings.Split(kv["for"], ",")
	xact := false // a transaction-level lock: only its transaction's end frees it
	ended := -1   // the event that ends it as drawn
	began := false
	for i, e := range res.Events {
		if e.Conn != conn || e.At < time.Duration(from) || e.At > end {
			continue
		}
		// At one instant a server releases before it grants again (a
		// request's connection reset runs before its statement): a grant
		// at the instant a hold ends is the next hold's, a release at the
		// instant a hold begins the previous one's.
		switch {
		case e.Kind == event.DBLockGranted && e.At == end && end != time.Duration(from) && to >= 0:
			continue
		case e.Kind == event.DBLockReleased && e.At == time.Duration(from) && end != time.Duration(from):
			continue
		}
		switch {
		case e.Kind == event.DBLockGranted && e.Key == key:
			// The client it is drawn granted for is the one the pooler
			// said it was serving with this backend then (its last
			// db.pool.mapped on the backend before the grant assigned
			// it); a backend no pooler maps is drawn for nobody else.
			if grants < len(forWho) {
				if who := pooledClientAt(res, conn, e.At); forWho[grants] != who {
					errf("grant %d at %v drawn for %q; the pooler was serving %q with %s", grants+1, e.At, forWho[grants], who, conn)
				}
			}
			if e.At == time.Duration(from) {
				began, xact = true, strings.Contains(e.Op, "xact")
			}
			grants++
		case e.Kind == event.DBLockReleased && e.Key == key:
			releases++
		case e.Kind == event.DBLockReleased && e.Key == "all" && !xact && e.At < end:
			errf("%s freed every session lock of %s at %v (event %d); drawn held until %v", e.Op, conn, e.At, i, end)
		}
		if e.At == end && ended < 0 && endsAs(res, i, key, why) {
			ended = i
		}
	}
	for i, e := range res.Events {
		if e.Kind == event.DBServerCrashed && e.At == end && why == "server crashed" {
			ended = i
		}
	}
	switch {
	case !began:
		errf("no grant of %s to %s at %d ns", key, conn, from)
	case to < 0:
	case ended < 0:
		errf("no event ends it as %q at %v", why, end)
	case !slices.Contains(named, ended):
		errf("the event that ends it as %q (%d) is not among its data-events %s", why, ended, s.Events)
	}
	if strconv.Itoa(grants) != kv["grants"] || strconv.Itoa(releases) != kv["releases"] {
		errf("the server granted %d× and released %d× in it", grants, releases)
	}
	if why == "released" && grants != releases {
		errf("ends released with %d grants and %d releases", grants, releases)
	}
	if gap := unheldByClients(res, time.Duration(from), end); strconv.FormatInt(int64(gap), 10) != kv["unheld"] {
		errf("no client holds the lock for %d ns of it", gap)
	}
	return grants
}

// endsAs: event i, on the hold's backend at its drawn end, ends the hold
// of key the way why says.
func endsAs(res *runner.Result, i int, key, why string) bool {
	e := res.Events[i]
	switch {
	case e.Kind == event.DBSessionEnded:
		return why == "session ended: "+e.Reason
	case e.Kind == event.DBSegmentReceived:
		// PostgreSQL frees a transaction's advisory locks when the
		// server receives its COMMIT or ROLLBACK.
		return e.Dir == "request" && e.Actor == e.Node && why == "freed by "+strings.ToUpper(e.Op)
	case e.Kind == event.DBLockReleased && (e.Key == key || e.Key == "all"):
		return why == freedBy(res, i)
	}
	return false
}

// freedBy is the cause of release i as the claims name it: the client's
// own unlock ("released"); SQL Server's COMMIT or ROLLBACK of the
// transaction owning an application lock, or the connection reset a
// pooled request carries (sp_reset_connection; MySQL's
// COM_RESET_CONNECTION); a pooler's reset of the backend, when the
// pooler's last word on that backend before it was "reset"; or another
// statement that frees them all.
func freedBy(res *runner.Result, i int) string {
	e := res.Events[i]
	switch e.Op {
	case "COMMIT", "ROLLBACK":
		return "freed by " + e.Op
	case "sp_reset_connection", "RESET":
		return "freed by the connection reset"
	}
	if e.Key != "all" {
		op := strings.ToLower(e.Op)
		if strings.Contains(op, "unlock") || strings.Contains(op, "release") {
			return "released"
		}
		return "freed by " + e.Op
	}
	pooler := ""
	for _, p := range res.Events[:i] {
		if p.Kind == event.DBPoolMapped && p.Session == e.Conn {
			pooler = p.Reason
		}
	}
	if pooler == "reset" {
		return "freed by the pooler's reset (" + e.Op + ")"
	}
	return "freed by " + e.Op
}

// unheldByClients: the instants of [from, end] that no client hold
// covers, summed over the pieces between every hold's ends.
func unheldByClients(res *runner.Result, from, end time.Duration) time.Duration {
	cuts := []time.Duration{from, end}
	for _, iv := range res.History.Intervals {
		cuts = append(cuts, iv.Start, iv.End)
	}
	slices.Sort(cuts)
	gap := time.Duration(0)
	for i := 0; i+1 < len(cuts); i++ {
		a, b := max(cuts[i], from), min(cuts[i+1], end)
		if a >= b {
			continue
		}
		covered := slices.ContainsFunc(res.History.Intervals, func(iv checker.Interval) bool { return iv.Start <= a && b <= iv.End })
		if !covered {
			gap += b - a
		}
	}
	return gap
}
