package runner

import (
	"slices"
	"testing"

	"github.com/locklab/locklab/scenarios"
)

// semaphore-refresh-after-expiry: the blind refresh re-lists c1's reclaimed
// permit, c1's release then frees it a second time, and c2, c3 and c4 hold
// three permits of two; c1 is never told. With the checked refresh c1
// learns it lost its permit at the refresh and no more than two hold.
func TestSemaphoreRefreshAfterExpiry(t *testing.T) {
	ends := func(res *Result) map[string]string {
		out := map[string]string{}
		for _, iv := range res.History.Intervals {
			out[iv.Client] = iv.EndReason
		}
		return out
	}
	sc, err := scenarios.Get("semaphore-refresh-after-expiry")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Report.Witness.MutualExclusion
	if o == nil || o.Permits != 2 {
		t.Fatalf("witness %v, want 3 holders of 2 permits", o)
	}
	var names []string
	for _, h := range o.Holders {
		names = append(names, h.Client)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"c2", "c3", "c4"}) {
		t.Fatalf("holders %v, want c2 c3 c4", names)
	}
	if got := ends(res)["c1"]; got != "release" {
		t.Fatalf("c1's hold ended by %q: the blind refresh must not tell it", got)
	}

	fixed, err := scenarios.Get("semaphore-refresh-after-expiry-fixed")
	if err != nil {
		t.Fatal(err)
	}
	res, err = Run(fixed, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Report.Witness.MutualExclusion; o != nil {
		t.Fatalf("fixed twin: witness %v", o)
	}
	if got := ends(res)["c1"]; got != "lost" {
		t.Fatalf("fixed twin: c1's hold ended by %q, want lost (the refresh refused)", got)
	}
}
