package reports

import (
	"slices"
	"strings"
	"testing"
)

// SQL Server's application locks get the backends lane from the grants
// and releases its node states (sim/mssqlnode/facts.go): the
// Transaction-owned lock of the early COMMIT ends at the COMMIT, 2.4 ms
// after its grant, while c1 goes on working; the pooled connection's
// Session lock is granted twice (c1's, then c2's after the reset freed
// it) and released twice on one backend.
func TestSQLServerBackendsLane(t *testing.T) {
	want := map[string]string{
		"mssql-transaction-commit-early": "backendhold c1#1>db1 lock from=8407458 to=10804053 grants=1 releases=1",
		"mssql-pooled-session-reset":     "backendhold app#1>db1 lock from=5999774 to=1013392577 grants=2 releases=2",
		"mssql-partitioned-holder":       "backendhold c1#1>db1 lock from=5944400 to=40005944400 grants=1 releases=0",
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
		if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, w+" ") }) {
			t.Errorf("%s: backends drawn %q, want one %q", r.id, got, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("not in the catalogue: %v", want)
	}
}
