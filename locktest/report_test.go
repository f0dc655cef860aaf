package locktest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/reports"
	"github.com/locklab/locklab/runner"
)

// The package's own tests cannot import locktest/htmlreport (it imports
// this package), so they set the writer as it does.
func init() {
	WriteReport = func(path string, res *runner.Result, replay string) error {
		return reports.WriteRunFile(path, res, nil, replay)
	}
}

// locktest, the package users import, does not depend on the report
// renderer (issue 33): its dependencies include no package reports.
func TestLocktestDoesNotImportReports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/locklab/locklab/reports" {
			t.Fatalf("package locktest depends on %s", dep)
		}
	}
}

// Without a writer, -locktest.report says what to import instead of
// writing nothing silently.
func TestReportWithoutWriterSaysWhatToImport(t *testing.T) {
	saved := WriteReport
	WriteReport = nil
	t.Cleanup(func() { WriteReport = saved })
	err := writeReport(filepath.Join(t.TempDir(), "out.html"), &runner.Result{}, "go test")
	if err == nil || !strings.Contains(err.Error(), `import _ "github.com/locklab/locklab/locktest/htmlreport"`) {
		t.Fatalf("writeReport without a writer: %v", err)
	}
}
