package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The acceptance: explore finds the Redlock clock-jump violation on
// its own, prints a shrunk schedule of at most 3 faults and a replay command
// that reproduces it byte for byte.
func TestExploreRedlockClockJumpAndReplay(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "cx.yaml")
	code, stdout, stderr := runCLI(t, "explore", "redlock", "--faults", "clock", "--seed", "1", "--out", out, "--json")
	if code != 1 {
		t.Fatalf("exit %d (want 1: a violation was found)\n%s%s", code, stdout, stderr)
	}
	var got exploreOutput
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	c := got.Counterexample
	if !got.Found || c == nil || c.Property != "mutual_exclusion" {
		t.Fatalf("no mutual-exclusion counterexample: %s", stdout)
	}
	if len(c.Faults) == 0 || len(c.Faults) > 3 || c.Clients > 2 {
		t.Fatalf("counterexample has %d faults and %d clients", len(c.Faults), c.Clients)
	}
	for _, f := range c.Faults {
		if f.Kind != "clock-jump" {
			t.Fatalf("fault %s in a clock-only exploration", f)
		}
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(strings.TrimSuffix(out, ".yaml") + ".html")
	if err != nil {
		t.Fatalf("no report beside the counterexample: %v", err)
	}
	// The explore report draws the mechanism, as 'run --report' of the
	// same counterexample does (issue 21: it drew none).
	runReport := filepath.Join(dir, "run.html")
	if code, _, stderr := runCLI(t, "run", out, "--report", runReport); code != 0 {
		t.Fatalf("run --report of the counterexample: exit %d\n%s", code, stderr)
	}
	runPage, err := os.ReadFile(runReport)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Redlock quorum", "votes"} {
		if !strings.Contains(string(runPage), want) {
			t.Fatalf("run --report draws no %q", want)
		}
		if !strings.Contains(string(page), want) {
			t.Errorf("explore's report draws no %q (run --report of the same file does)", want)
		}
	}
	// The replay command reproduces it, byte for byte.
	code, rout, _ := runCLI(t, "replay", out, "--json")
	var replay map[string]any
	json.Unmarshal([]byte(rout), &replay)
	if code != 0 || replay["trace_sha256"] != c.TraceSHA256 || replay["matches_expectation"] != true {
		t.Fatalf("replay exit %d, trace %v, want %s", code, replay["trace_sha256"], c.TraceSHA256)
	}
	// Human output names the minimal schedule and the replay line (the
	// files exist now, so replacing them takes --force).
	_, text, _ := runCLI(t, "explore", "redlock", "--faults", "clock", "--seed", "1", "--out", out, "--force")
	for _, want := range []string{"Minimal schedule:", "clock-jump", "Replay: locklab replay " + out, "Report: " + strings.TrimSuffix(out, ".yaml") + ".html"} {
		if !strings.Contains(text, want) {
			t.Fatalf("output lacks %q:\n%s", want, text)
		}
	}
}

func TestExploreNothingFoundExitsZero(t *testing.T) {
	code, out, _ := runCLI(t, "explore", "set-nx-px-lua", "--faults", "drift", "--runs", "20", "--out", filepath.Join(t.TempDir(), "x.yaml"))
	if code != 0 || !strings.Contains(out, "no violation in 20 runs") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestExploreBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explore"}, "explore needs exactly one algorithm"},
		{[]string{"explore", "paxos"}, `unknown algorithm "paxos"`},
		{[]string{"explore", "redlock", "--faults", "cosmic-rays"}, "cosmic-rays"},
		{[]string{"explore", "redlock", "--runs", "0"}, "--runs: expected a number of runs >= 1"},
		{[]string{"explore", "redlock", "--time", "soon"}, "--time: expected a duration"},
		// Issue 21: the single-server ZooKeeper model is retired; its
		// names say what replaced them.
		{[]string{"explore", "zk-queue"}, "zk-queue was the retired single-server ZooKeeper model; explore gozk-queue, the same recipe on the real go-zookeeper client"},
		{[]string{"matrix", "--algorithms", "zk-simple"}, "--algorithms: zk-simple was the retired single-server ZooKeeper model; its replacement gozk-simple runs the real go-zookeeper client"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
