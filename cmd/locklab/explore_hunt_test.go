package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// setnx-expire strands waiters (a crash between SETNX and EXPIRE) long
// before it shows an overlap: without --hunt the exploration stops at the
// liveness failure of run 15; hunting mutual exclusion goes on to the
// overlap, and the liveness runs it passed over are named, not dropped.
func TestExploreHuntGoesPastLiveness(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "explore", "setnx-expire", "--runs", "300", "--seed", "1", "--out", filepath.Join(dir, "plain.yaml"), "--json")
	if code != 1 {
		t.Fatalf("plain explore: exit %d\n%s%s", code, stdout, stderr)
	}
	var plain exploreOutput
	if err := json.Unmarshal([]byte(stdout), &plain); err != nil {
		t.Fatal(err)
	}
	if plain.Counterexample == nil || plain.Counterexample.Property != "liveness" || plain.Violations[0].Run != 15 {
		t.Fatalf("plain explore should stop at run 15's liveness failure: %s", stdout)
	}

	out := filepath.Join(dir, "hunted.yaml")
	code, stdout, stderr = runCLI(t, "explore", "setnx-expire", "--runs", "300", "--seed", "1", "--hunt", "mutual-exclusion", "--out", out, "--json")
	if code != 1 {
		t.Fatalf("hunted explore: exit %d\n%s%s", code, stdout, stderr)
	}
	var hunted exploreOutput
	if err := json.Unmarshal([]byte(stdout), &hunted); err != nil {
		t.Fatal(err)
	}
	if hunted.Counterexample == nil || hunted.Counterexample.Property != "mutual_exclusion" || hunted.Violations[0].Run <= 15 {
		t.Fatalf("--hunt mutual_exclusion should find an overlap after run 15: %s", stdout)
	}
	u := hunted.Unhunted
	if u == nil || u.FirstRun != 15 || u.Runs < 1 || strings.Join(u.Properties, ",") != "liveness" || u.Replay != "locklab explore setnx-expire --seed 1 --runs 15" {
		t.Fatalf("the liveness runs --hunt passed over are not named: %+v", u)
	}
	if strings.Join(hunted.Hunt, ",") != "mutual_exclusion" {
		t.Errorf("hunt in the JSON: %v", hunted.Hunt)
	}
	header, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(header), "'locklab explore setnx-expire --seed 1 --hunt mutual_exclusion'") {
		t.Errorf("the counterexample's header does not name the command that found it:\n%s", strings.SplitN(string(header), "\n", 3)[0])
	}
	if !strings.Contains(stderr, "--runs "+strconv.Itoa(hunted.Violations[0].Run+1)+" --hunt mutual_exclusion") {
		t.Errorf("the find-again command leaves out --hunt:\n%s", stderr)
	}
}

// A hunt that finds nothing it hunts still exits 1 and says so when runs
// broke a property it left out: the text never reads as "no violation".
func TestExploreHuntNeverReadsSafe(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "explore", "setnx-expire", "--runs", "20", "--seed", "1", "--hunt", "resource", "--out", filepath.Join(dir, "cx.yaml"))
	if code != 1 {
		t.Fatalf("exit %d, want 1 (run 15 broke liveness)\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"no resource violation in 20 runs", "passed over: 1 run(s) violated liveness, which --hunt leaves out (first: run 15; find it: locklab explore setnx-expire --seed 1 --runs 15)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "no violation") {
		t.Errorf("a hunt that passed over a broken run reads as safe:\n%s", stdout)
	}
}

func TestExploreHuntRefusesUnknownProperty(t *testing.T) {
	code, _, stderr := runCLI(t, "explore", "setnx-expire", "--hunt", "mutal_exclusion")
	want := `--hunt: unknown property "mutal_exclusion"; expected a comma-separated list of mutual_exclusion, resource, liveness (did you mean mutual_exclusion?)`
	if code != 2 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
}

// Shards of a hunted sweep merge with their passed-over runs joined, and
// shards hunting different properties are not one sweep.
func TestMergeHuntedShards(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, hunt := range []string{"mutual_exclusion", "mutual_exclusion", "resource"} {
		code, stdout, stderr := runCLI(t, "explore", "setnx-expire", "--runs", "40", "--seed", "1", "--hunt", hunt, "--shard", strconv.Itoa(i%2+1)+"/2", "--all", "--json", "--out", filepath.Join(dir, "cx"+strconv.Itoa(i)+".yaml"))
		if code != 0 && code != 1 {
			t.Fatalf("shard %d: exit %d\n%s", i, code, stderr)
		}
		f := filepath.Join(dir, "shard"+strconv.Itoa(i)+".json")
		if err := os.WriteFile(f, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	code, stdout, stderr := runCLI(t, "merge", files[0], files[1])
	if code != 1 {
		t.Fatalf("merge: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	var merged exploreOutput
	if err := json.Unmarshal([]byte(stdout), &merged); err != nil {
		t.Fatal(err)
	}
	if merged.Unhunted == nil || merged.Unhunted.FirstRun != 15 || strings.Join(merged.Hunt, ",") != "mutual_exclusion" {
		t.Fatalf("merged hunt %v, passed over %+v; want mutual_exclusion and run 15 first", merged.Hunt, merged.Unhunted)
	}
	code, _, stderr = runCLI(t, "merge", files[0], files[2])
	if code != 2 || !strings.Contains(stderr, "field hunt is resource") {
		t.Fatalf("shards hunting different properties merged: exit %d, %s", code, stderr)
	}
}
