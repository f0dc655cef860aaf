package reports

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// SQL Server's application locks get the backends lane from the grants
// and releases its node states (sim/mssqlnode/facts.go): the
// Transaction-owned lock of the early COMMIT ends at the COMMIT, 2.4 ms
// after its grant, while c1 goes on working, and is drawn freed by it;
// the pooled connection's Session lock taken for c1 ends at 301 ms, freed
// by the connection reset c2's request carries, and is granted again at
// once; the partitioned holder's lock goes with its session.
// PostgreSQL's transaction-level lock ends at the ROLLBACK, and behind a
// PgBouncer that resets every backend (DISCARD ALL) the session lock
// granted for c1 ends at the pooler's reset, 41 ms after its grant,
// instead of stacking with the next client's grant.
func TestSQLServerBackendsLane(t *testing.T) {
	want := map[string]struct{ prefix, end string }{
		"mssql-transaction-commit-early":             {"backendhold c1#1>db1 lock from=8407458 to=10804053 grants=1 releases=1", "freed by COMMIT"},
		"mssql-pooled-session-reset":                 {"backendhold app#1>db1 lock from=5999774 to=301203558 grants=1 releases=1", "freed by the connection reset"},
		"mssql-partitioned-holder":                   {"backendhold c1#1>db1 lock from=5944400 to=40005944400 grants=1 releases=0", "session ended: keepalive: 10 probes unanswered"},
		"mssql-pooled-session-reset-fixed":           {"backendhold app#1>db1 lock from=5999774 to=1013299027 grants=1 releases=1", "released"},
		"pg-advisory-xact-turns":                     {"backendhold c1#1>db1 4010637378 from=8407458 to=515807065 grants=1 releases=0", "freed by COMMIT"},
		"pgbouncer-transaction-pooling-reset-always": {"backendhold pgbouncer#1>db1 4010637378 from=121541421 to=162265779 grants=1 releases=0", "freed by the pooler's reset (DISCARD ALL)"},
	}
	for _, r := range catalogueMechanisms(t) {
		w, ok := want[r.id]
		if !ok {
			continue
		}
		delete(want, r.id)
		tl := buildTimelineMech(r.res, r.m, "t-", 0, r.res.End, false)
		var got []string
		for _, s := range allShapes(tl) {
			if strings.HasPrefix(s.Label, "backendhold ") {
				got = append(got, s.Label)
			}
		}
		i := slices.IndexFunc(got, func(l string) bool { return strings.HasPrefix(l, w.prefix+" ") })
		if i < 0 {
			t.Errorf("%s: backends drawn %q, want one %q", r.id, got, w.prefix)
			continue
		}
		if _, kv := labelFields(got[i]); kv["end"] != url.QueryEscape(w.end) {
			t.Errorf("%s: %q ends %q, want %q", r.id, got[i], kv["end"], url.QueryEscape(w.end))
		}
	}
	if len(want) > 0 {
		t.Errorf("not in the catalogue: %v", want)
	}
}

// PgBouncer's hand-overs are drawn from its own events: in transaction
// pooling c1 is served by backend #1 from its first statement, and the
// session lock that backend keeps is granted for c1 first.
func TestPgBouncerMappingFromEvents(t *testing.T) {
	for _, r := range catalogueMechanisms(t) {
		if r.id != "pgbouncer-transaction-pooling" {
			continue
		}
		tl := buildTimelineMech(r.res, r.m, "t-", 0, r.res.End, false)
		var maps, holds []string
		for _, s := range allShapes(tl) {
			switch {
			case strings.HasPrefix(s.Label, "poolmap "):
				maps = append(maps, s.Label)
			case strings.HasPrefix(s.Label, "backendhold pgbouncer#1>db1 "):
				holds = append(holds, s.Label)
			}
		}
		if !slices.ContainsFunc(maps, func(l string) bool {
			return strings.HasPrefix(l, "poolmap pgbouncer#1>db1 c1#1>pgbouncer from=101214065 to=141867615 end=released")
		}) {
			t.Errorf("c1's stay on backend #1 is not drawn from its assignment to its release: %q", maps)
		}
		if len(holds) == 0 || !strings.Contains(holds[0], " for=c1,") {
			t.Errorf("backend #1's lock is not granted for c1 first: %q", holds)
		}
		return
	}
	t.Fatal("pgbouncer-transaction-pooling is not in the catalogue")
}
