package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
)

// Explorations of a real client library (go-zookeeper, in synctest
// bubbles) use --workers: bubbles run side by side, each with its own
// crypto/rand stream, and the violating runs and the counterexample are
// the same whatever the worker count.
func TestBubbleExploreSameCounterexampleAnyWorkers(t *testing.T) {
	dir := t.TempDir()
	var first exploreOutput
	for k, workers := range []string{"1", "4"} {
		out := filepath.Join(dir, "cx"+workers+".yaml")
		code, stdout, stderr := runCLI(t, "explore", "gozk-simple", "--seed", "1", "--runs", "30", "--all", "--workers", workers, "--json", "--out", out)
		var got exploreOutput
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 1 || got.Counterexample == nil {
			t.Fatalf("--workers %s: exit %d, %v\n%s%s", workers, code, err, stdout, stderr)
		}
		if k == 0 {
			first = got
			continue
		}
		runs := func(o exploreOutput) (r []int) {
			for _, v := range o.Violations {
				r = append(r, v.Run)
			}
			return r
		}
		if !slices.Equal(runs(got), runs(first)) || got.Runs != first.Runs || got.Counterexample.TraceSHA256 != first.Counterexample.TraceSHA256 {
			t.Fatalf("--workers %s found %v in %d runs, counterexample %s; --workers 1 found %v in %d, %s",
				workers, runs(got), got.Runs, got.Counterexample.TraceSHA256, runs(first), first.Runs, first.Counterexample.TraceSHA256)
		}
	}
}
