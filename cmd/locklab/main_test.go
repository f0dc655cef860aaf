package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/sim/bubblehost"
)

// runCLI runs the command in process. The binary hosts synctest bubbles
// through bubblehost.Main; here the test's own *testing.T hosts them.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	bubblehost.Bind(t)
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunJSONMatchesExpectation(t *testing.T) {
	code, out, stderr := runCLI(t, "run", "del-wrong-client", "--seed", "7", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"scenario", "seed", "verdict", "expected", "matches_expectation", "witness", "trace_sha256"} {
		if _, ok := got[k]; !ok {
			t.Errorf("missing key %q", k)
		}
	}
	if got["matches_expectation"] != true {
		t.Fatalf("matches_expectation = %v", got["matches_expectation"])
	}
	v := got["verdict"].(map[string]any)
	if v["mutual_exclusion"] != "violated" || v["resource"] != "violated" || v["liveness"] != "ok" {
		t.Fatalf("verdict %v", v)
	}
	w := got["witness"].(map[string]any)
	if w["mutual_exclusion"] == nil {
		t.Fatal("no mutual-exclusion witness in JSON")
	}
	_, out2, _ := runCLI(t, "run", "--json", "del-wrong-client", "--seed=7")
	var again map[string]any
	json.Unmarshal([]byte(out2), &again)
	if again["trace_sha256"] != got["trace_sha256"] || len(got["trace_sha256"].(string)) != 64 {
		t.Fatalf("trace digests %v and %v", got["trace_sha256"], again["trace_sha256"])
	}
}

func TestRunHumanOutputShowsWitnessAndFaults(t *testing.T) {
	code, out, _ := runCLI(t, "run", "gc-pause-beyond-ttl")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"pause c1 for 15s", "resource          VIOLATED", "lost update: c1 wrote 99", "Replay: locklab run gc-pause-beyond-ttl --seed 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	os.WriteFile(broken, []byte("id: b\nalgorithm: set-nx-px-lua\nttl: 10s\nnodes: [A]\nclients: {count: 2}\nfaults:\n  - kind: pause\n    target: c7\n    duration: 1s\n    at: 1s\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{nil, "missing command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", "no-such-scenario"}, `unknown scenario "no-such-scenario"`},
		{[]string{"run"}, "run needs exactly one scenario"},
		{[]string{"run", "del-wrong-client", "--seed", "minus"}, `--seed: expected a non-negative integer, got "minus"`},
		{[]string{"run", "del-wrong-client", "--colour"}, "flag provided but not defined: -colour"},
		{[]string{"run", broken}, broken + `:8:13: faults[0].target: unknown client "c7"; expected one of c1, c2`},
		{[]string{"run", filepath.Join(dir, "missing.yaml")}, "cannot read scenario file"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr %q, want it to contain %q", c.args, stderr, c.want)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") > 0 && c.args != nil {
			t.Errorf("%v: error is not one line: %q", c.args, stderr)
		}
	}
}

func TestMismatchExitsOne(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "wrong.yaml")
	// The compare-and-delete twin does not break, but this file claims it does.
	os.WriteFile(path, []byte("id: wrong\nalgorithm: set-nx-px-lua\nttl: 10s\nnodes: [A]\nclients: {count: 2, cycles: 1}\nexpect: {mutual_exclusion: violated}\n"), 0o644)
	code, out, _ := runCLI(t, "run", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(out, "MISMATCH") {
		t.Fatalf("output does not flag the mismatch:\n%s", out)
	}
}

func TestListJSON(t *testing.T) {
	code, out, _ := runCLI(t, "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range rows {
		ids[r["id"].(string)] = true
		if r["algorithm"] == "" || r["title"] == "" {
			t.Errorf("incomplete row %v", r)
		}
	}
	for _, id := range []string{"setnx-expire-crash", "del-wrong-client", "gc-pause-beyond-ttl"} {
		if !ids[id] {
			t.Errorf("list lacks %s", id)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"help", "run"}, {"help", "scenario"}, {"run", "--help"}} {
		code, out, _ := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "locklab") && !strings.Contains(out, "Usage") {
			t.Errorf("%v: exit %d, output %q", args, code, out)
		}
	}
}

// 'help scenario' names every algorithm a scenario file may use: the list
// comes from the registry, so a new algorithm cannot be left out (issue 20
// item 8: the hand-written list named 8 of 14).
func TestHelpScenarioListsEveryAlgorithm(t *testing.T) {
	code, out, _ := runCLI(t, "help", "scenario")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, algorithmsPlaceholder) {
		t.Fatal("the algorithm placeholder was printed")
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(out, func(r rune) bool { return r == ' ' || r == '\n' || r == ',' }) {
		words[w] = true
	}
	names := algorithms.Names()
	// 13 since the single-server zk-simple, zk-queue and zk-queue-naive
	// retired (issue 21); help still names them and what they run.
	if len(names) < 13 {
		t.Fatalf("registry lists %d algorithms, want at least 13", len(names))
	}
	for _, retired := range []string{"zk-simple", "zk-queue", "zk-queue-naive", "gozk-*"} {
		if !words[retired] {
			t.Errorf("help scenario does not say what the retired %s runs", retired)
		}
	}
	for _, name := range names {
		if !words[name] {
			t.Errorf("help scenario does not name %s", name)
		}
	}
	_, list, _ := strings.Cut(out, "Algorithms (")
	list, _, _ = strings.Cut(list, "\n\n")
	for _, line := range strings.Split(list, "\n") {
		if len(line) > 78 {
			t.Errorf("line longer than 78 columns: %q", line)
		}
	}
}

// The hand-written example the README points to keeps working.
func TestExampleScenarioFiles(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example scenarios")
	}
	for _, f := range files {
		code, out, stderr := runCLI(t, "run", f, "--json")
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", f, code, out, stderr)
		}
	}
}
