package runner

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

// fuzzLimits keep each fuzzed run small: a few clients, cycles and faults,
// a minute of simulated time and 50,000 kernel steps of work, so the
// fuzzer spends its time on inputs, not on long runs. Without the work
// budget a run could do the default budget's millions of steps, which
// under the fuzzer's coverage instrumentation outlasted CI's whole
// -fuzztime ("context deadline exceeded"); a fuzzed run that reaches it is
// cut short and still ends with a verdict.
var fuzzLimits = scenarios.Limits{FileBytes: 16 << 10, Nodes: 6, Clients: 4, Faults: 16, Cycles: 16, Duration: time.Minute, Work: 50_000}

// FuzzScenario parses AND runs: no input makes the parser, the validation
// pass or the run panic or hang; a refused input gets errors that are one
// line each and name the file; an accepted one runs to a verdict and
// survives a marshal round trip. Seeded with every catalogue file (as
// written, not re-marshalled) and the crash inputs of issue 15; the corpus
// in testdata/fuzz/FuzzScenario holds inputs found since.
func FuzzScenario(f *testing.F) {
	entries, _ := os.ReadDir("../scenarios/catalog")
	for _, e := range entries {
		b, _ := os.ReadFile("../scenarios/catalog/" + e.Name())
		f.Add(b)
	}
	f.Add([]byte(validScenario))
	f.Add([]byte(base))
	for _, c := range crashInputs {
		f.Add([]byte(strings.Replace(base, c.from, c.to, 1)))
	}
	f.Add([]byte("id: x\nalgorithm: setnx-expire\nttl: 1s\nnodes: [A]\nclients: {count: 1, work: 5s..1s}\n"))
	f.Add([]byte("faults: [{kind: partition, groups: [[c1], []]}]"))
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Add([]byte(base + "wait: {backoff: exponential, delay: 10ms, max: 80ms}\n"))
	f.Add([]byte("counterexample: {format: 1, seed: 3, trace_sha256: x}\n" + base))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Files naming a real-client algorithm (gozk-*) run in a bubble
		// hosted by this test, as the CLI hosts one: they are fuzzed too.
		bubblehost.Bind(t)
		s, err := scenarios.ParseWith("fuzz.yaml", data, fuzzLimits)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.yaml") {
					t.Fatalf("error line does not name the file: %q", line)
				}
			}
			return
		}
		// A counterexample block is checked against the file, never
		// trusted: whatever it says, the check answers without panicking.
		if err := s.CheckFile(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.yaml") {
					t.Fatalf("counterexample error does not name the file: %q", line)
				}
			}
		}
		// go-redis's own retries back off on real timers (see
		// docs/design.md), so a fuzzed file that drops every reply with
		// library_retries on costs seconds of wall time per run: the
		// fuzzer would take it for a hang. Runs here keep them off.
		s.Clients.LibraryRetries = false
		for name, c := range s.Clients.Each {
			c.LibraryRetries = nil
			s.Clients.Each[name] = c
		}
		res, err := Run(s, s.Seed, Options{CheckTimeout: time.Second})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line run error: %q", err)
			}
			return
		}
		if res.Report == nil {
			t.Fatal("no verdict")
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatalf("valid scenario does not marshal: %v", err)
		}
		if _, err := scenarios.ParseWith("fuzz.yaml", out, scenarios.Limits{FileBytes: 1 << 20, Nodes: 6, Clients: 4, Faults: 16, Cycles: 16, Duration: time.Minute}); err != nil {
			t.Fatalf("marshalled scenario does not parse: %v\n%s", err, out)
		}
	})
}
