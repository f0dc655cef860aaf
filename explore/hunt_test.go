package explore

import (
	"strings"
	"testing"
)

// Options.Hunt (issue 31): only a run violating a hunted property
// is a finding; the others are counted. A misspelt property is refused
// rather than hunting nothing.
func TestExploreHunt(t *testing.T) {
	if _, err := Explore(Options{Algorithm: "set-nx-px-lua", Runs: 1, Hunt: []string{"overlap"}}); err == nil || !strings.Contains(err.Error(), `hunt "overlap": expected mutual_exclusion, resource or liveness`) {
		t.Fatalf("err %v, want the misspelt property named", err)
	}
	all, err := Explore(Options{Algorithm: "set-nx-px-del", Runs: 60, Seed: 1, Workers: 2, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Findings) == 0 || all.Findings[0].Property == "liveness" {
		t.Skipf("seed 1 finds %+v in set-nx-px-del's first 60 runs; the test needs a safety finding", all.Findings)
	}
	first := all.Findings[0]
	// Hunting liveness only passes over that run (and any other safety
	// failure before the first liveness one) and counts it.
	live, err := Explore(Options{Algorithm: "set-nx-px-del", Runs: 60, Seed: 1, Workers: 2, NoShrink: true, Hunt: []string{"liveness"}})
	if err != nil {
		t.Fatal(err)
	}
	if live.Unhunted == 0 || live.UnhuntedFirst != first.Run || !strings.Contains(strings.Join(live.UnhuntedProperties, ","), first.Property) {
		t.Fatalf("hunting liveness: unhunted %d from run %d (%v); want run %d's %s counted", live.Unhunted, live.UnhuntedFirst, live.UnhuntedProperties, first.Run, first.Property)
	}
	for _, f := range live.Findings {
		if f.Property != "liveness" {
			t.Fatalf("hunting liveness found %s in run %d", f.Property, f.Run)
		}
	}
}
