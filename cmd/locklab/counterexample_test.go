package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The counterexample's property field is checked on replay: an edited one
// replayed as a pass (issue 25).
func TestEditedCounterexamplePropertyIsRefused(t *testing.T) {
	dir := inDir(t)
	code, _, stderr := runCLI(t, "explore", "set-nx-px-del", "--faults", "pause", "--runs", "50", "--seed", "3", "--out", "ce.yaml")
	if code != 1 {
		t.Fatalf("explore: exit %d, %s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "ce.yaml"))
	if err != nil || !strings.Contains(string(data), "\n  property: mutual_exclusion\n") {
		t.Fatalf("counterexample without its property (%v):\n%s", err, data)
	}
	if code, _, stderr := runCLI(t, "run", "ce.yaml"); code != 0 {
		t.Fatalf("unedited replay: exit %d, %s", code, stderr)
	}
	for _, c := range []struct{ to, want string }{
		{"liveness", `ce.yaml:9:13: counterexample.property: the counterexample reproduces liveness violated, but its expect says liveness: "(not set)" (edited?)`},
		{"mutual_exclusions", `ce.yaml:9:13: counterexample.property: expected one of mutual_exclusion, resource, liveness, found "mutual_exclusions" (did you mean mutual_exclusion?)`},
	} {
		edited := strings.Replace(string(data), "  property: mutual_exclusion", "  property: "+c.to, 1)
		os.WriteFile(filepath.Join(dir, "edited.yaml"), []byte(edited), 0o644)
		code, _, stderr := runCLI(t, "run", "edited.yaml")
		if code != 2 || !strings.Contains(stderr, strings.Replace(c.want, "ce.yaml", "edited.yaml", 1)) {
			t.Errorf("property %s: exit %d, stderr:\n%s\nwant:\n%s", c.to, code, stderr, c.want)
		}
	}
}

// A counterexample that cannot be saved is not lost: the file's text goes
// to stderr, the summary still prints the witness and a replay that needs
// no file, and the exit status says the save failed (issue 25).
func TestUnwritableOutKeepsTheFinding(t *testing.T) {
	dir := inDir(t)
	os.Mkdir(filepath.Join(dir, "ro"), 0o555)
	out := filepath.Join(dir, "ro", "missing-dir", "cx.yaml")
	code, stdout, stderr := runCLI(t, "explore", "set-nx-px-del", "--faults", "pause", "--runs", "50", "--seed", "3", "--out", out)
	if code != 2 {
		t.Fatalf("exit %d; want 2 (the save failed)", code)
	}
	for _, want := range []string{"cannot save the counterexample to " + out, "here it is; save it to a file", "counterexample:\n  format: 1", "property: mutual_exclusion"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{"Witness:\n  mutual exclusion: c1 held", "Saved: nothing", "Replay: locklab explore set-nx-px-del --faults pause --seed 3 --runs "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "Report:") {
		t.Errorf("a report that was not written is announced:\n%s", stdout)
	}
}
