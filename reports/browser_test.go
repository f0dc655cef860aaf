package reports

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
)

// The browser test renders a handful of generated pages in headless
// Chromium, with every host name unresolvable so nothing can come from the
// network, and checks that
//   - the page logs nothing to the console and raises no error (errors.js
//     adds #locklab-js-error on any uncaught error or failed load, and
//     Chromium's --enable-logging prints every console message as CONSOLE);
//   - the inline script ran to its end (<html data-js="ready">), and with
//     ECharts present the charts were drawn;
//   - the timeline shows the witness, naming the right clients;
//   - with JavaScript disabled the timeline and the event log are all there;
// and it saves a screenshot of each page into $LOCKLAB_ARTIFACTS (or a
// temporary directory). Without Chromium it skips: run
// `bash scripts/install-chromium.sh` to enable it.

// chromiumPath finds the browser: $LOCKLAB_CHROMIUM, else chromium on PATH.
func chromiumPath() string {
	if p := os.Getenv("LOCKLAB_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

type browser struct {
	path string
}

// run starts one headless Chromium with a fresh profile and returns its
// stdout and stderr.
func (b browser) run(t *testing.T, extra ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(),
		"--host-resolver-rules=MAP * ~NOTFOUND",
		"--hide-scrollbars", "--mute-audio",
	}
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, b.path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, tail(stderr.String(), 2000))
	}
	return stdout.String(), stderr.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// consoleLine matches Chromium's log line for a console message of a page.
var consoleLine = regexp.MustCompile(`(?m)^.*:CONSOLE[(:].*$`)

type browserPage struct {
	name    string
	file    string
	charts  bool     // ECharts was inlined: the charts must be drawn
	witness []string // fragments the dumped DOM must contain
}

func TestReportsInBrowser(t *testing.T) {
	path := chromiumPath()
	if path == "" {
		t.Skip("chromium is not installed; run `bash scripts/install-chromium.sh` to enable the browser test")
	}
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	start := time.Now()
	b := browser{path: path}
	out := os.Getenv("LOCKLAB_ARTIFACTS")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	// ECharts: the real local copy when there is one, else a stand-in, so
	// the chart code path is exercised either way.
	realECharts := false
	if data, err := os.ReadFile(DefaultEChartsPath()); err == nil && len(data) > 100_000 {
		realECharts = true
		t.Setenv(EChartsEnv, DefaultEChartsPath())
	} else {
		fake := filepath.Join(dir, "fake-echarts.js")
		js := `window.echarts = { init: function (el) { el.appendChild(document.createElement("canvas")); return { setOption: function () {}, resize: function () {} }; } };`
		if err := os.WriteFile(fake, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(EChartsEnv, fake)
	}
	var shots []browserPage

	// 1. del-wrong-client with charts: the overlap witness.
	res, cmp := runScenario(t, "del-wrong-client")
	o := res.Report.Witness.MutualExclusion
	if o == nil {
		t.Fatal("del-wrong-client has no overlap witness")
	}
	file := filepath.Join(dir, "del-wrong-client.html")
	if err := WriteRunFile(file, res, cmp, "locklab run del-wrong-client --seed 1"); err != nil {
		t.Fatal(err)
	}
	shots = append(shots, browserPage{name: "del-wrong-client", file: file, charts: true, witness: []string{
		`id="tl-witness-overlap"`, `data-clients="` + o.First.Client + ` ` + o.Second.Client + `"`,
	}})

	// 2. gc-pause-beyond-ttl without charts: the lost-update witness.
	t.Setenv(EChartsEnv, "off")
	res, cmp = runScenario(t, "gc-pause-beyond-ttl")
	r := res.Report.Witness.Resource
	if r == nil {
		t.Fatal("gc-pause-beyond-ttl has no resource witness")
	}
	file = filepath.Join(dir, "gc-pause-beyond-ttl.html")
	if err := WriteRunFile(file, res, cmp, "locklab run gc-pause-beyond-ttl --seed 1"); err != nil {
		t.Fatal(err)
	}
	shots = append(shots, browserPage{name: "gc-pause-beyond-ttl", file: file, witness: []string{
		`id="tl-witness-resource"`, `data-clients="` + r.Write.Client + ` ` + r.Overwritten.Client + `"`, `id="charts-note"`,
	}})

	// 3 and 4. A lesson (setnx-expire-crash beside its fix) and the index.
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var some []*scenarios.Scenario
	for _, s := range all {
		if strings.HasPrefix(s.ID, "setnx-expire-crash") {
			some = append(some, s)
		}
	}
	course := filepath.Join(dir, "course")
	index, err := WriteCourse(course, some, CourseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lessons := Lessons(some)
	if len(lessons) == 0 {
		t.Fatal("no setnx-expire-crash lesson")
	}
	shots = append(shots,
		browserPage{name: "lesson-" + lessons[0].First.ID, file: filepath.Join(course, lessons[0].File()), witness: []string{`id="a-tl-witness-liveness"`, `id="a-cmp-witness-liveness"`, `data-scenario="` + lessons[0].IDs()[len(lessons[0].IDs())-1] + `"`}},
		browserPage{name: "course-index", file: index, witness: []string{`href="` + lessons[0].File() + `"`}},
	)

	// 5. A matrix.
	file = filepath.Join(dir, "matrix.html")
	var buf bytes.Buffer
	if err := WriteMatrix(&buf, MatrixData{Cells: []MatrixCell{
		{Algorithm: "set-nx-px-del", FaultClass: "pause", Runs: 10, MutualExclusion: 0.7, Resource: 0.7, Example: "del-wrong-client.html"},
		{Algorithm: "set-nx-px-lua", FaultClass: "pause", Runs: 10, Resource: 0.3},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shots = append(shots, browserPage{name: "matrix", file: file, witness: []string{`class="heat"`, "M 70%"}})

	// A canary: the same report with a broken script and a remote one added
	// must trip both detectors, or the checks below prove nothing.
	t.Run("canary", func(t *testing.T) {
		data, err := os.ReadFile(shots[0].file)
		if err != nil {
			t.Fatal(err)
		}
		bad := `<script src="https://cdn.example.com/x.js"></script><script>console.log("canary"); notDefined();</script>`
		i := bytes.LastIndex(data, []byte("</body>"))
		if i < 0 {
			t.Fatal("report has no </body>")
		}
		data = append(data[:i:i], append([]byte(bad), data[i:]...)...)
		file := filepath.Join(t.TempDir(), "canary.html")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		dom, logs := b.run(t, "--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+file)
		if !consoleLine.MatchString(logs) {
			t.Error("a console message went unnoticed")
		}
		for _, w := range []string{`id="locklab-js-error"`, "notDefined", "cannot load https://cdn.example.com/x.js"} {
			if !strings.Contains(dom, w) {
				t.Errorf("the error marker lacks %q", w)
			}
		}
	})

	for _, p := range shots {
		t.Run(p.name, func(t *testing.T) {
			url := "file://" + p.file
			dom, logs := b.run(t, "--enable-logging=stderr", "--v=0", "--dump-dom", url)
			if m := consoleLine.FindAllString(logs, 5); len(m) > 0 {
				t.Errorf("console messages:\n%s", strings.Join(m, "\n"))
			}
			if strings.Contains(dom, `id="locklab-js-error"`) {
				i := strings.Index(dom, `id="locklab-js-error"`)
				t.Errorf("page reported a JavaScript error: %s", tail(dom[i:min(len(dom), i+400)], 400))
			}
			if !strings.Contains(dom, `data-js="ready"`) {
				t.Error("the page's script did not run to its end")
			}
			if p.charts {
				if strings.Contains(dom, `data-charts="0"`) || !strings.Contains(dom, "<canvas") {
					t.Errorf("charts were not drawn (real ECharts: %v)", realECharts)
				}
			}
			for _, w := range p.witness {
				if !strings.Contains(dom, w) {
					t.Errorf("rendered page lacks %q", w)
				}
			}

			// With JavaScript off, everything but the charts is there. (With
			// scripting disabled in the browser --dump-dom prints nothing,
			// so a copy of the page forbids its own scripts instead.)
			if strings.HasPrefix(p.name, "del-wrong") {
				data, err := os.ReadFile(p.file)
				if err != nil {
					t.Fatal(err)
				}
				csp := `<head><meta http-equiv="Content-Security-Policy" content="script-src 'none'">`
				noJS := filepath.Join(t.TempDir(), "nojs.html")
				if err := os.WriteFile(noJS, bytes.Replace(data, []byte("<head>"), []byte(csp), 1), 0o644); err != nil {
					t.Fatal(err)
				}
				dom, _ := b.run(t, "--dump-dom", "file://"+noJS)
				for _, w := range append([]string{`<svg class="tl"`, `class="log-table"`}, p.witness...) {
					if !strings.Contains(dom, w) {
						t.Errorf("with JavaScript off the page lacks %q", w)
					}
				}
				if strings.Contains(dom, `data-js="ready"`) {
					t.Error("scripts ran although JavaScript was off")
				}
			}

			shot := filepath.Join(out, p.name+".png")
			b.run(t, "--screenshot="+shot, "--window-size=1400,2000", url)
			st, err := os.Stat(shot)
			if err != nil || st.Size() < 10_000 {
				t.Errorf("no screenshot at %s (%v)", shot, err)
			} else {
				t.Logf("screenshot: %s", shot)
			}
		})
	}
	t.Logf("browser test: %d pages in %s", len(shots), time.Since(start).Round(time.Millisecond))
}
