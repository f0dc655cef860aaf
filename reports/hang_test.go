package reports

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

// A hang is drawn on the hung client's row as a pause is: the band from
// its process.hung to its process.continued, "c1 hangs (2s)" and
// "continues" at the event that ended it, each naming its events and
// re-derived by the claims test's own rules. No catalogue scenario has a
// hang that ends (watchdog-stuck-holder's lasts for good), so this one is
// the stuck holder with a two-second hang.
func TestHangDrawnOnItsRow(t *testing.T) {
	bubblehost.Bind(t)
	const src = `id: hang-that-ends
title: A watchdog holder whose worker hangs for two seconds
algorithm: set-nx-px-lua
ttl: 3s
params: {watchdog: "true"}
nodes: [A]
clients:
  count: 2
  cycles: 1
  each:
    c1: {start: 0s}
    c2: {start: 5ms..20ms}
duration: 10s
faults:
  - kind: hang
    target: c1
    after: {client: c1, op: READ}
    duration: 2s
`
	sc, err := scenarios.Parse("hang-that-ends.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(sc, sc.Seed, runner.Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	tl := buildTimelineMech(res, deriveMechanism(res), "t-", 0, res.End, false)
	var hung, continues, band string
	for _, s := range allShapes(tl) {
		switch w, _ := labelFields(s.Label); {
		case len(w) == 0:
		case w[0] == "hung":
			hung = s.Text
		case w[0] == "continues":
			continues = s.Label
		case w[0] == "faultrow" && w[1] == "hang":
			band = s.Label
		}
	}
	if hung != "c1 hangs (2s)" || !strings.HasPrefix(continues, "continues c1 ") || !strings.HasPrefix(band, "faultrow hang c1 ") {
		t.Errorf("the hang on c1's row: text %q, end %q, band %q", hung, continues, band)
	}
	n, errs := faultClaims(res, tl)
	for _, err := range errs {
		t.Error(err)
	}
	if n == 0 {
		t.Error("no fault element checked")
	}
}
