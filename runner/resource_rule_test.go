package runner

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

// One resource rule for every backend (issue 31 item 7). A writer of a
// reader-writer lock pauses past its lease in the middle of its section;
// a reader reads meanwhile, and the writer wakes and writes. On an unfenced
// store the history is serial (the reader's read, then the writer's read
// and write: final 99, as a serial order gives), so the resource is ok on
// ZooKeeper, whose lease carries a token (the node's sequence number), as
// on Redis, whose lease does not; only mutual exclusion is violated. Before,
// the ZooKeeper run read "stale token" because its lease had a token the
// store never looked at.
func TestResourceRuleSameForEveryBackend(t *testing.T) {
	const tmpl = `id: rw-writer-paused
algorithm: ALG
ttl: 4s
PARAMS
clients:
  count: 2
  cycles: 1
  each:
    c1: {start: 0s, work: 100ms, mode: write}
    c2: {start: 500ms, work: 100ms, mode: read}
duration: 40s
faults:
  - kind: pause
    target: c1
    duration: 12s
    after: {client: c1, op: READ}
`
	for _, c := range []struct{ alg, params string }{
		{"redis-rwlock", "nodes: [A]\nwait: {delay: 100ms}"},
		{"gozk-rwlock", "params: {zk_servers: \"1\", session_timeout: 4s}"},
	} {
		t.Run(c.alg, func(t *testing.T) {
			bubblehost.Bind(t)
			text := strings.NewReplacer("ALG", c.alg, "PARAMS", c.params).Replace(tmpl)
			sc, err := scenarios.Parse("x.yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			r := mustRun(t, sc, 1, Options{})
			v := r.Report.Verdict
			if v.MutualExclusion != checker.Violated || v.Resource != checker.OK || r.Report.Metrics.FinalValue != 99 {
				t.Fatalf("mutual exclusion %s, resource %s (%v), final %d; want violated, ok, 99", v.MutualExclusion, v.Resource, r.Report.Witness.Resource, r.Report.Metrics.FinalValue)
			}
			tokens := false
			for _, a := range r.History.Accesses {
				tokens = tokens || a.FencingToken != 0
			}
			if want := c.alg == "gozk-rwlock"; tokens != want {
				t.Fatalf("accesses carry tokens: %v, want %v (the case this test is about)", tokens, want)
			}
			// The same run on a fenced store judges the tokens: the
			// writer's token is lower than the reader's, so its write is
			// refused there (and not accepted as stale).
			if c.alg == "gozk-rwlock" {
				fenced := sc.Clone()
				fenced.Resource.TokenCheck = ">"
				fr := mustRun(t, fenced, 1, Options{})
				if fr.Report.Verdict.Resource != checker.OK || fr.Report.Metrics.RejectedWrites != 1 {
					t.Fatalf("fenced: resource %s, rejected %d; want ok with the writer's stale write refused", fr.Report.Verdict.Resource, fr.Report.Metrics.RejectedWrites)
				}
			}
		})
	}
}
