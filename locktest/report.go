package locktest

import (
	"errors"

	"github.com/locklab/locklab/runner"
)

// WriteReport, when set, writes the HTML report of a counterexample's run
// to path; replay is the go test command that replays it, shown in the
// report. -locktest.report calls it for each failing class.
//
// locktest does not render HTML itself: the renderer (package reports)
// sits above the runner, and a package users import should not pull it in
// (docs/locktest.md, "Reports"). Importing package
// github.com/locklab/locklab/locktest/htmlreport for its side effect sets
// it to the project's report:
//
//	import _ "github.com/locklab/locklab/locktest/htmlreport"
//
// A test binary may set it to a writer of its own instead (in an init
// function or TestMain, before Run).
var WriteReport func(path string, res *runner.Result, replay string) error

// errNoReportWriter is what -locktest.report says when nothing renders.
var errNoReportWriter = errors.New("-locktest.report: no report writer in this test binary; add  import _ \"github.com/locklab/locklab/locktest/htmlreport\"  to one of its test files (or set locktest.WriteReport)")

func writeReport(path string, res *runner.Result, replay string) error {
	if WriteReport == nil {
		return errNoReportWriter
	}
	return WriteReport(path, res, replay)
}
