package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMatrixBadFlagsExitTwo(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"matrix", "--classes", "pause,gc"}, []string{`--classes: unknown fault class "gc"`, "clock, drift, pause, drop, delay, crash, restart, partition"}},
		{[]string{"matrix", "--algorithms", "set-nx-px-del,nope"}, []string{`--algorithms: unknown algorithm "nope"`, "set-nx-px-lua"}},
		{[]string{"matrix", "--seeds", "0"}, []string{`--seeds: expected a number of runs per cell >= 1, got "0"`}},
		{[]string{"matrix", "--seeds", "many"}, []string{`--seeds: expected a number of runs per cell >= 1, got "many"`}},
		{[]string{"matrix", "--workers", "-3"}, []string{`--workers: expected a number between 1 and 1024, found "-3"`}},
		{[]string{"matrix", "--classes", ""}, []string{"--classes: no fault class given"}},
		{[]string{"matrix", "pause"}, []string{`matrix takes no arguments, got "pause"`}},
		{[]string{"matrix", "--colour"}, []string{"flag provided but not defined: -colour"}},
	}
	for _, c := range cases {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		// (An unknown flag also prints the usage, as for every command.)
		if stdout != "" && !strings.Contains(stderr, "not defined") {
			t.Errorf("%v: wrote to stdout: %q", c.args, stdout)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q, want it to contain %q", c.args, stderr, w)
			}
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: error is not one line: %q", c.args, stderr)
		}
	}
}

func TestMatrixHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "matrix"}, {"matrix", "--help"}} {
		code, out, _ := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "Usage: locklab matrix") || !strings.Contains(out, "partition") {
			t.Errorf("%v: exit %d, output %q", args, code, out)
		}
		for i, line := range strings.Split(out, "\n") {
			if n := len([]rune(line)); n > 80 {
				t.Errorf("%v: help line %d has %d columns: %q", args, i+1, n, line)
			}
		}
	}
	if _, out, _ := runCLI(t, "help"); !strings.Contains(out, "matrix") {
		t.Error("main help does not list matrix")
	}
}

func TestMatrixOutput(t *testing.T) {
	args := []string{"matrix", "--seeds", "3", "--classes", "pause,crash", "--algorithms", "set-nx-px-del,set-nx-px-lua", "--workers", "2"}

	code, out, stderr := runCLI(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("progress written although stderr is not a terminal: %q", stderr)
	}
	var got struct {
		Options struct {
			Seeds      int      `json:"seeds"`
			Classes    []string `json:"classes"`
			Algorithms []string `json:"algorithms"`
		} `json:"options"`
		Setups []map[string]any `json:"setups"`
		Cells  []struct {
			Algorithm string         `json:"algorithm"`
			Class     string         `json:"class"`
			Runs      int            `json:"runs"`
			Violated  map[string]int `json:"violated"`
			Unknown   map[string]int `json:"unknown"`
			Shares    map[string]float64
			Example   *struct {
				Seed     uint64           `json:"seed"`
				Schedule []map[string]any `json:"schedule"`
			} `json:"example"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if got.Options.Seeds != 3 || strings.Join(got.Options.Classes, ",") != "pause,crash" || len(got.Options.Algorithms) != 2 || len(got.Setups) != 2 {
		t.Fatalf("options %+v, %d setups", got.Options, len(got.Setups))
	}
	if len(got.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(got.Cells))
	}
	examples := 0
	for _, c := range got.Cells {
		if c.Runs != 3 {
			t.Errorf("%s × %s: %d runs", c.Algorithm, c.Class, c.Runs)
		}
		for _, p := range []string{"mutual_exclusion", "resource", "liveness"} {
			if _, ok := c.Violated[p]; !ok {
				t.Errorf("%s × %s: no violated.%s", c.Algorithm, c.Class, p)
			}
			if want := float64(c.Violated[p]) / 3; c.Shares[p] != want {
				t.Errorf("%s × %s: share %v, want %v", c.Algorithm, c.Class, c.Shares[p], want)
			}
		}
		if c.Example != nil {
			examples++
			if c.Example.Seed < 1 || c.Example.Seed > 3 || len(c.Example.Schedule) == 0 {
				t.Errorf("%s × %s: example %+v", c.Algorithm, c.Class, c.Example)
			}
		}
	}
	if examples == 0 {
		t.Error("no cell has an example")
	}

	// The same matrix, for people, with examples written as scenario files.
	dir := filepath.Join(t.TempDir(), "examples")
	code, out, stderr = runCLI(t, append(args, "--examples", dir)...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"Mutual exclusion violated", "Resource violated", "Liveness violated", "set-nx-px-del", "PAUSE", "CRASH", "Legend:", "locklab run " + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for i, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > 120 && !strings.Contains(line, dir) {
			t.Errorf("line %d has %d columns: %q", i+1, n, line)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) != examples {
		t.Fatalf("%d example files, %d examples", len(files), examples)
	}
	// Every example replays with the verdict it was saved with.
	for _, f := range files {
		code, out, stderr := runCLI(t, "run", f)
		if code != 0 {
			t.Errorf("locklab run %s: exit %d\n%s%s", f, code, out, stderr)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
