package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The acceptance for sweeps across machines: shards run as
// separate processes of the built CLI, and the union of their violating
// run indices is the unsharded sweep's; 'locklab merge' joins them into
// the unsharded sweep's violations and counterexample.
func TestShardedSweepUnionEqualsUnsharded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "locklab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sweep := []string{"explore", "redlock", "--faults", "clock", "--seed", "1", "--runs", "24", "--all", "--json"}
	cli := func(name string, args ...string) (int, []byte) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out
	}
	decode := func(data []byte) exploreOutput {
		t.Helper()
		var o exploreOutput
		if err := json.Unmarshal(data, &o); err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		return o
	}
	code, data := cli("all.json", append(sweep, "--out", "all.yaml")...)
	whole := decode(data)
	if code != 1 || len(whole.Violations) < 2 {
		t.Fatalf("the unsharded sweep found %d violations (exit %d); the test needs several to split", len(whole.Violations), code)
	}
	runsOf := func(vs []exploreViolation) []int {
		var r []int
		for _, v := range vs {
			r = append(r, v.Run)
		}
		return r
	}
	var union []int
	var files []string
	runs := 0
	for _, shard := range []string{"1/3", "2/3", "3/3"} {
		name := "shard" + shard[:1] + ".json"
		_, data := cli(name, append(sweep, "--shard", shard, "--out", "cx"+shard[:1]+".yaml")...)
		part := decode(data)
		if part.Shard == nil || part.Shard.Count != 3 || part.Shard.RunBound != 24 {
			t.Fatalf("shard %s output lacks its shard: %s", shard, data)
		}
		union = append(union, runsOf(part.Violations)...)
		runs += part.Runs
		files = append(files, name)
	}
	slices.Sort(union)
	if !slices.Equal(union, runsOf(whole.Violations)) || runs != whole.Runs {
		t.Fatalf("shards ran %d runs and found %v; the sweep ran %d and found %v", runs, union, whole.Runs, runsOf(whole.Violations))
	}
	code, data = cli("merged.json", append([]string{"merge"}, files...)...)
	merged := decode(data)
	if code != 1 || !slices.Equal(runsOf(merged.Violations), runsOf(whole.Violations)) || merged.Runs != whole.Runs {
		t.Fatalf("merge exit %d, violations %v in %d runs; want 1, %v in %d", code, runsOf(merged.Violations), merged.Runs, runsOf(whole.Violations), whole.Runs)
	}
	if merged.Counterexample == nil || merged.Counterexample.TraceSHA256 != whole.Counterexample.TraceSHA256 {
		t.Fatalf("merged counterexample %+v differs from the sweep's %+v", merged.Counterexample, whole.Counterexample)
	}
	// Parts that are not the whole sweep are refused, naming what is wrong.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", files[0], files[2]}, "shard(s) 2/3 missing"},
		{[]string{"merge", files[0], files[0], files[1]}, "shard 1/3 is also in"},
		{[]string{"merge", "all.json"}, `all.json: no "shard" field`},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, cmd.ProcessState.ExitCode(), out, c.want)
		}
	}
}

func TestShardFlagBadInput(t *testing.T) {
	for _, c := range []struct{ shard, want string }{
		{"x", "--shard: expected I/N such as 2/8"},
		{"0/3", "a Kubernetes completion index counts from 0, add one"},
		{"4/3", "expected I, the shard, between 1 and 3"},
		{"1/0", "expected N, the number of shards, between 1 and"},
	} {
		code, _, stderr := runCLI(t, "explore", "redlock", "--runs", "1", "--shard", c.shard)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("--shard %s: exit %d, stderr %q, want 2 and %q", c.shard, code, stderr, c.want)
		}
	}
	bad := filepath.Join(t.TempDir(), "cut.json")
	os.WriteFile(bad, []byte("{\n  \"seed\": 1,"), 0o644)
	code, _, stderr := runCLI(t, "merge", bad)
	if code != 2 || !strings.Contains(stderr, "cut.json:2:13: the JSON ends early") {
		t.Errorf("merge of a cut file: exit %d, %q", code, stderr)
	}
}
