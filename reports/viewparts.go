package reports

import (
	"bytes"
	"html/template"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/runner"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// The parts of a run's view (newRunView in view.go): the verdict table,
// the fault table, the scenario as YAML, the comparison table and
// porcupine's view of the history.

// verdictRows are the verdict table: each property's verdict against the
// scenario's expectation.
func verdictRows(res *runner.Result) []verdictRow {
	var rows []verdictRow
	verd, exp := res.Report.Verdict, res.Scenario.Expect
	for _, r := range []struct {
		name     string
		got, exp checker.Status
	}{
		{"mutual exclusion", verd.MutualExclusion, exp.MutualExclusion},
		{"resource safety", verd.Resource, exp.Resource},
		{"liveness", verd.Liveness, exp.Liveness},
	} {
		row := verdictRow{Property: r.name, Got: string(r.got), Expected: string(r.exp), Asserted: r.exp != "", Match: r.exp == "" || r.exp == r.got}
		if row.Expected == "" {
			row.Expected = "not asserted"
		}
		rows = append(rows, row)
	}
	return rows
}

// faultRows are the fault table: each applied fault and its extent, read
// from its events (faultspan.go).
func faultRows(res *runner.Result) []faultRow {
	var rows []faultRow
	for _, a := range res.Applied {
		row := faultRow{At: checker.Sec(a.At), Text: a.Text, Note: a.Fault.Note}
		if sp := readFaultSpan(res.Events, a, res.End); sp.Forever {
			row.Until = "end of run (never heals)"
		} else if sp.Until > a.At {
			row.Until = checker.Sec(sp.Until)
		}
		rows = append(rows, row)
	}
	return rows
}

// setupYAML is the scenario as YAML, without its course: block.
func setupYAML(sc *scenarios.Scenario) string {
	// The scenario as YAML is the run's setup: its lesson notes (the
	// course: block, with the instructor's notes) are not, and a handout
	// must not carry them.
	setup := sc.Clone()
	setup.Course = nil
	y, err := setup.Marshal()
	if err != nil {
		return "# cannot render the scenario as YAML: " + err.Error()
	}
	return string(y)
}

// compareRows are the comparison table: the run, then each algorithm run
// beside it (none without comparisons).
func compareRows(res *runner.Result, cmp []runner.Comparison, summary string) []compareRow {
	var rows []compareRow
	if len(cmp) > 0 {
		rows = append(rows, compareRow{Algorithm: res.Scenario.Algorithm, Summary: summary, Main: true, Verdict: res.Report.Verdict, Metrics: compareMetrics(res, res.Metrics)})
		for _, c := range cmp {
			ci, _ := algorithms.Lookup(c.Algorithm)
			rows = append(rows, compareRow{Algorithm: c.Algorithm, Summary: ci.Summary, Verdict: c.Verdict, Metrics: compareMetrics(c.Result, c.Metrics)})
		}
	}

	return rows
}

// setViz renders porcupine's view of the history into v.
func (v *runView) setViz(res *runner.Result) {
	var viz bytes.Buffer
	if err := res.Report.Visualize(&viz); err != nil {
		v.VizErr = err.Error()
	} else {
		v.Viz = withVizProbe(viz.String())
		if viewer, data, ok := splitViz(viz.String()); ok {
			v.VizData = template.JS(scriptSafe([]byte(data)))
			v.vizViewer = viewer
		}
	}
}
