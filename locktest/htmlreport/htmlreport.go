// Package htmlreport renders locktest's counterexamples as the project's
// HTML run report (package reports). Import it for its side effect in a
// test binary that uses -locktest.report:
//
//	import _ "github.com/locklab/locklab/locktest/htmlreport"
//
// It lives beside locktest rather than inside it so that package locktest,
// which users import, does not depend on the report renderer
// (docs/locktest.md, "Reports").
package htmlreport

import (
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/reports"
	"github.com/locklab/locklab/runner"
)

func init() { locktest.WriteReport = Write }

// Write writes the HTML report of one counterexample's run to path.
func Write(path string, res *runner.Result, replay string) error {
	return reports.WriteRunFile(path, res, nil, replay)
}
