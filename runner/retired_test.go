package runner

import (
	"os"
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
)

// The retired spellings params.fencing and resource.fencing run the same
// run as their new words (scenarios/retired_test.go checks the reading).
func TestRetiredSpellingsRunTheSameRun(t *testing.T) {
	old, err := scenarios.Parse("old.yaml", []byte(`id: old-words
algorithm: set-nx-px-lua
ttl: 10s
params: {fencing: incr, fence_start: "32"}
nodes: [A]
resource: {initial: 7, fencing: ">"}
clients: {count: 2, cycles: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	now, err := scenarios.Parse("new.yaml", []byte(`id: old-words
algorithm: set-nx-px-lua
ttl: 10s
params: {token_source: incr, fence_start: "32"}
nodes: [A]
resource: {initial: 7, token_check: ">"}
clients: {count: 2, cycles: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	if x, y := mustRun(t, old, 1, Options{}), mustRun(t, now, 1, Options{}); x.TraceSHA256 != y.TraceSHA256 {
		t.Errorf("old spellings ran %s, new ones %s", x.TraceSHA256, y.TraceSHA256)
	}
}

// A counterexample sealed by the locklab before the rename
// (testdata/retired-spellings-counterexample.yaml: written by that
// locklab's Seal and Marshal, with params.fencing and resource.fencing)
// still agrees with itself and replays to its recorded trace; edited, it
// does not.
func TestRetiredSpellingsCounterexampleReplays(t *testing.T) {
	data, err := os.ReadFile("testdata/retired-spellings-counterexample.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Parse("cx.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.CheckFile(); err != nil {
		t.Fatalf("the old counterexample does not agree with itself: %v", err)
	}
	res := mustRun(t, sc, sc.Seed, Options{})
	if err := sc.CheckReplay(sc.Seed, res.Report, res.TraceSHA256); err != nil {
		t.Fatal(err)
	}
	edited, err := scenarios.Parse("cx.yaml", []byte(strings.Replace(string(data), "fence_start: \"32\"", "fence_start: \"31\"", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := edited.CheckFile(); err == nil || !strings.Contains(err.Error(), "counterexample.scenario_sha256: the scenario's digest is") {
		t.Fatalf("an edited old counterexample: %v, want a digest mismatch", err)
	}
	// The same file in the new words was edited after it was sealed.
	renamed := strings.Replace(strings.Replace(string(data), "  fencing: incr\n", "  token_source: incr\n", 1), "  fencing: '>='\n", "  token_check: '>='\n", 1)
	moved, err := scenarios.Parse("cx.yaml", []byte(renamed))
	if err != nil {
		t.Fatal(err)
	}
	if err := moved.CheckFile(); err == nil {
		t.Fatal("a sealed file rewritten by hand into the new words still agrees with its digest")
	}
}
