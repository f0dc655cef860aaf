package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Faults that fire and cannot change anything are warned about, from what
// the run did (issue 20 item 6): a crash of a node already down, a
// partition between hosts that never talk, a clock jump on a node nothing
// reaches afterwards, a clock jump on a client that times its lease with
// the monotonic clock.
func TestWarningsForFaultsThatChangeNothing(t *testing.T) {
	dir := inDir(t)
	sc := `id: inert
algorithm: set-nx-px-lua
ttl: 1s
nodes: [A]
clients: {count: 2, cycles: 1, work: 10ms, think: 0s, clock: monotonic, each: {c1: {work: 6s}}}
duration: 10s
faults:
  - {kind: node-crash, target: A, at: 3s}
  - {kind: node-crash, target: A, at: 4s}
  - {kind: partition, groups: [[c1], [c2]], at: 0s, duration: 5s}
  - {kind: clock-jump, target: A, jump: 20s, at: 3500ms}
  - {kind: clock-jump, target: c1, jump: -5s, at: 1ms}
`
	os.WriteFile(filepath.Join(dir, "inert.yaml"), []byte(sc), 0o644)
	code, out, stderr := runCLI(t, "run", "inert.yaml", "--json")
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	want := []string{
		"faults[1] (node-crash) changed nothing: A was already down",
		"faults[2] (partition) changed nothing: no host of [c1] ever exchanged a message with one of [c2]",
		"faults[3] (clock-jump) changed nothing: no message reached or left A after it, so nothing read its clock",
		"faults[4] (clock-jump) changed nothing: c1 times its lease with the monotonic clock (clock: monotonic), which a step of the wall clock does not move",
	}
	for _, w := range want {
		if !strings.Contains(stderr, "locklab: warning: "+w+"\n") {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stderr, "faults[0]") {
		t.Errorf("the first crash of A acted, yet it is warned about:\n%s", stderr)
	}
	var got struct{ Warnings []string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("json warnings:\n%s\nwant:\n%s", strings.Join(got.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

// A clock jump on a client that leaves clients.clock unset relies on a
// default that changed (wall, then monotonic): the file is told so, at the
// fault's place, and told how to say which meaning it wants.
func TestWarningForAClockJumpOnTheDefaultClock(t *testing.T) {
	dir := inDir(t)
	sc := `id: old-file
algorithm: set-nx-px-lua
ttl: 1s
nodes: [A]
clients: {count: 1, cycles: 1}
duration: 5s
faults:
  - {kind: clock-jump, target: c1, jump: 5s, at: 10ms}
`
	os.WriteFile(filepath.Join(dir, "old.yaml"), []byte(sc), 0o644)
	code, out, stderr := runCLI(t, "run", "old.yaml", "--json")
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	w := "old.yaml:8:32: faults[0].target: c1's clock jump leaves its lease alone: clients.clock is not set, and clients now default to the monotonic clock, which a step of the wall clock does not move (before, they read the wall clock and the jump moved the lease); write clients.clock: wall for the old meaning, or clients.clock: monotonic to keep this one"
	if !strings.Contains(stderr, "locklab: warning: "+w+"\n") {
		t.Errorf("stderr lacks %q:\n%s", w, stderr)
	}
	var got struct{ Warnings []string }
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Warnings) != 1 || got.Warnings[0] != w {
		t.Errorf("json warnings %q (%v); want only the default's", got.Warnings, err)
	}
	// Saying the clock silences the default's warning; wall makes the jump act.
	os.WriteFile(filepath.Join(dir, "new.yaml"), []byte(strings.Replace(sc, "cycles: 1}", "cycles: 1, clock: wall}", 1)), 0o644)
	if code, _, stderr := runCLI(t, "run", "new.yaml"); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}

// A file in the spellings before issue 33 (params.fencing for the token
// source, resource.fencing for the store's rule) runs, and run says at
// each old key which new spelling it was read as, on stderr and in
// --json; the same file in the new words runs without a warning. Both
// spellings of one key are bad input (exit status 2).
func TestWarningForRetiredFencingSpellings(t *testing.T) {
	dir := inDir(t)
	sc := `id: old-words
algorithm: set-nx-px-lua
ttl: 1s
params: {fencing: incr}
nodes: [A]
resource: {fencing: ">"}
clients: {count: 2, cycles: 1}
duration: 5s
`
	os.WriteFile(filepath.Join(dir, "old.yaml"), []byte(sc), 0o644)
	code, out, stderr := runCLI(t, "run", "old.yaml", "--json")
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	want := []string{
		`old.yaml:4:19: params.fencing: renamed; read as token_source: "incr" (params.token_source is where the fencing tokens come from, resource.token_check how the store checks them)`,
		`old.yaml:6:21: resource.fencing: renamed; read as token_check: ">" (resource.token_check is how the store checks fencing tokens, params.token_source where they come from)`,
	}
	for _, w := range want {
		if !strings.Contains(stderr, "locklab: warning: "+w+"\n") {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	var got struct{ Warnings []string }
	if err := json.Unmarshal([]byte(out), &got); err != nil || strings.Join(got.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("json warnings %q (%v); want %q", got.Warnings, err, want)
	}
	renamed := strings.Replace(strings.Replace(sc, "{fencing: incr}", "{token_source: incr}", 1), `{fencing: ">"}`, `{token_check: ">"}`, 1)
	os.WriteFile(filepath.Join(dir, "new.yaml"), []byte(renamed), 0o644)
	if code, _, stderr := runCLI(t, "run", "new.yaml"); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("new words: exit %d, stderr %s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "both.yaml"), []byte(strings.Replace(renamed, `{token_check: ">"}`, `{token_check: ">", fencing: ">="}`, 1)), 0o644)
	code, _, stderr = runCLI(t, "run", "both.yaml")
	if w := `locklab: both.yaml:6:39: resource.fencing: is the retired spelling of resource.token_check, which this file also sets; keep token_check (how the store checks fencing tokens) and remove fencing`; code != 2 || !strings.Contains(stderr, w+"\n") {
		t.Errorf("both spellings: exit %d, stderr %s; want 2 and %q", code, stderr, w)
	}
}

// locklab replay of a counterexample sealed before issue 33's renames
// (runner/testdata/retired-spellings-counterexample.yaml, written by
// that locklab) agrees with itself, reproduces its violation (exit 0: the
// expectation is the violation) and names the new spellings.
func TestReplayOfACounterexampleInRetiredSpellings(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "runner", "testdata", "retired-spellings-counterexample.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := inDir(t)
	os.WriteFile(filepath.Join(dir, "cx.yaml"), data, 0o644)
	code, out, stderr := runCLI(t, "replay", "cx.yaml")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	for _, w := range []string{"cx.yaml:21:12: params.fencing: renamed; read as token_source: \"incr\"", "cx.yaml:41:12: resource.fencing: renamed; read as token_check: \">=\""} {
		if !strings.Contains(stderr, "locklab: warning: "+w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}
