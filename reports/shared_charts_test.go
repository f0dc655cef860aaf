package reports

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
)

// chartJSON is chart id's option in the rendered page.
func chartJSON(t *testing.T, views []chartView, id string) string {
	t.Helper()
	for _, v := range views {
		if v.ID == id {
			b, err := json.Marshal(v.Option)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatalf("no chart %s", id)
	return ""
}

// A semaphore's report counts the permits in use per instant, up to the
// three holders of two permits, and outlines all three on the timeline.
func TestSemaphoreReportCountsPermits(t *testing.T) {
	t.Setenv(EChartsEnv, "off")
	res, cmp := runScenario(t, "semaphore-refresh-after-expiry")
	o := res.Report.Witness.MutualExclusion
	if o == nil || len(o.Holders) != 3 {
		t.Fatalf("witness %v", o)
	}
	steps := holdSteps(res.History.Intervals)
	most := 0
	for _, s := range steps {
		most = max(most, len(s.others))
	}
	if most != 3 {
		t.Fatalf("at most %d permits in use, want 3", most)
	}
	js := chartJSON(t, buildCharts(res, "tl-"), "tl-chart-permits")
	if !strings.Contains(js, "permits in use: 3 (c2 c3 c4)") || !strings.Contains(js, `"yAxis":2`) {
		t.Errorf("permits chart lacks the crowd or the permits line: %s", js)
	}
	page := render(t, res, cmp)
	for _, w := range []string{
		`data-clients="c2 c3 c4"`,
		"OVERLAP: c2, c3 and c4 hold 3 permits of 2 from " + checker.Sec(o.From),
	} {
		if !strings.Contains(page, w) {
			t.Errorf("report lacks %q", w)
		}
	}
}

// A reader-writer lock's report counts readers and writers apart, and
// its bars say who reads and who writes.
func TestReadWriteReportSeparatesReadersAndWriters(t *testing.T) {
	t.Setenv(EChartsEnv, "off")
	res, cmp := runScenario(t, "rwlock-writer-overlaps-paused-reader")
	js := chartJSON(t, buildCharts(res, "tl-"), "tl-chart-readers-writers")
	for _, w := range []string{"readers: 1 (c1)", "writers: 1 (c2)"} {
		if !strings.Contains(js, w) {
			t.Errorf("readers-writers chart lacks %q", w)
		}
	}
	page := render(t, res, cmp)
	for _, w := range []string{"c1 reads", "c2 writes", "holds the lock as a reader"} {
		if !strings.Contains(page, w) {
			t.Errorf("report lacks %q", w)
		}
	}
	if _, ok := sharedChart(mustMutex(t), "tl-"); ok {
		t.Error("a mutex's report has a holders chart")
	}
}

func mustMutex(t *testing.T) *runner.Result {
	res, _ := runScenario(t, "del-wrong-client")
	return res
}
