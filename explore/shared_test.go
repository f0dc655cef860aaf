package explore

import (
	"slices"
	"testing"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/scenarios"
)

// explore over a semaphore scenario keeps its permits through the draw
// and the shrinking: the counterexample is judged as a semaphore, and its
// witness names permits+1 holders.
func TestExploreSemaphoreKeepsPermits(t *testing.T) {
	base, err := scenarios.Get("semaphore-clock-skew-fixed")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Explore(Options{Algorithm: base.Algorithm, Base: base, Classes: []faults.Class{faults.ClassPause}, Runs: 40, Seed: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Findings) == 0 {
		t.Fatalf("no violation in %d runs", ex.Runs)
	}
	f := ex.Findings[0]
	for _, sc := range []*scenarios.Scenario{f.Scenario, f.Minimal} {
		if sc != nil && sc.Clients.Permits != 2 {
			t.Fatalf("%s has %d permits, want the base's 2", sc.ID, sc.Clients.Permits)
		}
	}
	res := f.MinimalResult
	if res == nil {
		res = f.Result
	}
	o := res.Report.Witness.MutualExclusion
	if o == nil || o.Permits != 2 || len(o.Holders) != 3 {
		t.Fatalf("witness %v, want 3 holders of 2 permits", o)
	}
}

// explore over a reader-writer scenario keeps its clients' modes: drawn
// client i takes the mode of the base's client i, and a client removed by
// shrinking takes its mode with it.
func TestExploreReadWriteKeepsModes(t *testing.T) {
	base, err := scenarios.Get("rwlock-writer-starvation-fixed")
	if err != nil {
		t.Fatal(err)
	}
	cycle := scenarios.ModeCycle(base)
	if len(cycle) == 0 {
		t.Fatal("the base has no per-client modes")
	}
	sc := exploreRun(base, []faults.Class{faults.ClassPause}, 1, 1)
	for i, c := range sc.ClientNames() {
		if got, want := sc.ModeOf(c), cycle[i%len(cycle)]; got != want {
			t.Fatalf("drawn %s has mode %q, want %q", c, got, want)
		}
	}
	// The base's c1, c2, c3 read and c4 writes: without c1, the old c2
	// to c4 are c1 to c3, the writer now c3.
	shrunk, ok := withoutClient(base, 1)
	if !ok {
		t.Fatal("c1 could not be removed")
	}
	var got []string
	for _, c := range shrunk.ClientNames() {
		got = append(got, shrunk.ModeOf(c))
	}
	if want := []string{scenarios.ModeRead, scenarios.ModeRead, scenarios.ModeWrite}; !slices.Equal(got, want) {
		t.Fatalf("after removing c1 the modes are %v, want %v", got, want)
	}
}

// The matrix (and explore's default base) gives a semaphore two permits
// and a reader-writer lock two readers and a writer; a mutex neither.
func TestMatrixBaseOfSharedPrimitives(t *testing.T) {
	for _, c := range []struct {
		algorithm string
		permits   int
		modes     []string
	}{
		{"redis-semaphore", 2, []string{"", "", ""}},
		{"redis-permit-semaphore", 2, []string{"", "", ""}},
		{"redis-rwlock", 0, []string{scenarios.ModeRead, scenarios.ModeRead, scenarios.ModeWrite}},
		{"set-nx-px-lua", 0, []string{"", "", ""}},
	} {
		sc, err := matrix.Base(c.algorithm)
		if err != nil {
			t.Fatal(err)
		}
		var modes []string
		for _, n := range sc.ClientNames() {
			modes = append(modes, sc.ModeOf(n))
		}
		if sc.Clients.Permits != c.permits || !slices.Equal(modes, c.modes) {
			t.Errorf("%s: permits %d, modes %q; want %d, %q", c.algorithm, sc.Clients.Permits, modes, c.permits, c.modes)
		}
	}
}
