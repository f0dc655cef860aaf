// Package reports renders locklab runs as self-contained HTML pages: one run
// (WriteRun), a broken scenario beside its fixed twin (WriteLesson), the
// course index (WriteCourseIndex) and the algorithm × fault matrix
// (WriteMatrix).
//
// Every page works offline and never depends on JavaScript for its content:
// the timeline of a run is SVG drawn in Go, tables are plain HTML, and the
// only scripts are inline. When a local copy of ECharts is available
// ($LOCKLAB_ECHARTS, or the cache that scripts/fetch-echarts.sh fills) it is
// inlined and interactive charts are added; no page ever refers to a remote
// script or style sheet.
//
// Pages are written with html/template, so every string that comes from a
// scenario file or a flag is escaped.
package reports

import (
	"bufio"
	"embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/locklab/locklab/runner"
)

//go:embed assets/templates.html assets/report.css assets/report.js assets/errors.js
var assets embed.FS

var pages = template.Must(template.New("pages").Funcs(template.FuncMap{
	"f":          coord,
	"sub":        func(a, b float64) float64 { return a - b },
	"div":        func(a, b float64) float64 { return a / b },
	"pct":        func(v float64) string { return strconv.FormatFloat(v*100, 'f', 0, 64) + "%" },
	"termAnchor": termAnchor,
}).ParseFS(assets, "assets/templates.html"))

// coord writes an SVG coordinate with one decimal at most ("12", "12.5").
func coord(v float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
}

func asset(name string) string {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var (
	css      = template.CSS(asset("report.css"))
	reportJS = template.JS(asset("report.js"))
	errorsJS = template.JS(asset("errors.js"))
)

// crumb is one link of a page's breadcrumb trail.
type crumb struct {
	Text, Href string
}

// page is what every page template gets.
type page struct {
	Title    string
	Crumbs   []crumb
	CSS      template.CSS
	ErrorsJS template.JS
	ReportJS template.JS
	ECharts  template.JS // the local echarts.min.js, or empty
	// EChartsSrc is a relative URL of the shared echarts.min.js (a
	// course writes it once per directory), or empty.
	EChartsSrc string
	// Shared, when set, is the relative path ("" or "../") of a directory
	// holding locklab.css and locklab.js (a course writes them once) that
	// the page links to instead of inlining them.
	Shared string

	Runs     []*runView
	Lesson   *lessonView
	Index    *indexView
	Matrix   *matrixView
	Glossary []GlossaryEntry
	Handout  bool
}

func newPage(title string, ec echartsAsset) *page {
	p := &page{Title: title, CSS: css, ErrorsJS: errorsJS, ReportJS: reportJS, ECharts: ec.js, EChartsSrc: ec.src}
	if ec.shared {
		p.Shared = "./"
	}
	return p
}

// writeSharedAssets writes the style sheet and script that course pages
// link to, once per directory.
func writeSharedAssets(dir string) error {
	for name, data := range map[string]string{"locklab.css": asset("report.css"), "locklab.js": asset("report.js")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return fmt.Errorf("cannot write %s: %w", name, err)
		}
	}
	return nil
}

// RunInput is one run to render: its result, the comparisons run beside it
// and the command that replays it.
type RunInput struct {
	Result   *runner.Result
	Compared []runner.Comparison
	Replay   string
}

// WriteRunFile writes the HTML report of one run (and its comparisons) to
// path. replay is the command that reproduces the run.
func WriteRunFile(path string, res *runner.Result, cmp []runner.Comparison, replay string) error {
	return writeFile(path, func(w io.Writer) error { return WriteRun(w, res, cmp, replay) })
}

// WriteRun writes the HTML report of one run to w.
func WriteRun(w io.Writer, res *runner.Result, cmp []runner.Comparison, replay string) error {
	if res == nil || res.Scenario == nil || res.Report == nil {
		return fmt.Errorf("report: no run to render")
	}
	ec := loadECharts()
	v := newRunView(res, cmp, replay, "", ec.ok())
	v.ChartsNote = ec.note
	p := newPage(res.Scenario.ID+" — locklab report", ec)
	p.Runs = []*runView{v}
	return pages.ExecuteTemplate(w, "run-page", p)
}

// writeFile writes a page through a buffer to a temporary name in the
// same directory and renames it into place, so a page is whole or absent
// even when the program is interrupted; it reports errors of both the
// template and the file.
func writeFile(path string, render func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("cannot write report %s: %w", path, err)
	}
	// The rename would replace a device, a FIFO or a socket with a
	// regular file (issue 32: /dev/full replaced as root); a page is
	// written over a regular file only.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("cannot write report %s: it is not a regular file (%v)", path, st.Mode().Type())
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write report: %w", err)
	}
	tmp := f.Name()
	fail := func(format string, err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf(format, path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := render(bw); err != nil {
		return fail("cannot render report %s: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fail("cannot write report %s: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail("cannot write report %s: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write report %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write report %s: %w", path, err)
	}
	return nil
}
