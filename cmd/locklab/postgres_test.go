package main

import (
	"encoding/json"
	"testing"

	"github.com/locklab/locklab/sim/bubblehost"
)

// Issue 22's acceptance check: the PgBouncer scenario, run with seed 7,
// reports mutual exclusion violated and matches its expectation; its
// fixed twin is ok throughout.
func TestRunPgbouncerTransactionPoolingJSON(t *testing.T) {
	bubblehost.Bind(t) // pgx runs in a bubble
	for _, c := range []struct {
		id, me string
	}{{"pgbouncer-transaction-pooling", "violated"}, {"pgbouncer-transaction-pooling-fixed", "ok"}} {
		code, out, stderr := runCLI(t, "run", c.id, "--seed", "7", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %s", c.id, code, stderr)
		}
		var got struct {
			Matches bool              `json:"matches_expectation"`
			Verdict map[string]string `json:"verdict"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: not one JSON object: %v\n%s", c.id, err, out)
		}
		if !got.Matches || got.Verdict["mutual_exclusion"] != c.me {
			t.Fatalf("%s: matches_expectation %v, verdict %v; want mutual_exclusion %s", c.id, got.Matches, got.Verdict, c.me)
		}
	}
}
