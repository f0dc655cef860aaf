package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/bubblehost"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// runScenario runs a catalogue scenario with its own seed, keeping the trace.
func runScenario(t *testing.T, id string) (*runner.Result, []runner.Comparison) {
	t.Helper()
	sc, err := scenarios.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	res, cmp, err := runner.RunCompared(sc, sc.Seed, runner.Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	return res, cmp
}

func render(t *testing.T, res *runner.Result, cmp []runner.Comparison) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteRun(&buf, res, cmp, "locklab run "+res.Scenario.ID+" --seed 1"); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// remoteAsset matches any script or style sheet that is not inline.
var remoteAsset = regexp.MustCompile(`(?i)<script[^>]*\ssrc\s*=|<link[^>]*rel\s*=\s*"?stylesheet|@import|https?://[^"'\s]*\.(js|css)\b|go-echarts\.github\.io|cdn\.`)

func TestRunReportShowsTheOverlapWitness(t *testing.T) {
	t.Setenv(EChartsEnv, "off")
	res, cmp := runScenario(t, "del-wrong-client")
	o := res.Report.Witness.MutualExclusion
	if o == nil {
		t.Fatal("del-wrong-client: no mutual-exclusion witness")
	}
	page := render(t, res, cmp)

	// The highlight element of the overlap names both clients and the window.
	want := []string{
		`id="tl-witness-overlap"`,
		`data-clients="` + o.First.Client + ` ` + o.Second.Client + `"`,
		`data-label="overlap ` + o.First.Client + ` ` + o.Second.Client + ` ` + checker.Sec(o.From) + ` ` + checker.Sec(o.To) + `"`,
		"OVERLAP: " + o.First.Client + " and " + o.Second.Client + " both hold the lock from " + checker.Sec(o.From) + " to " + checker.Sec(o.To),
		`id="tl-witness-resource"`,
		"locklab run del-wrong-client --seed 1",
		"mutual exclusion violated",
		"Plain DEL",                                // title
		"https://redis.io/docs/latest/develop/use", // source link
		`<iframe class="viz"`,                      // porcupine
		`data-log`,                                 // event log
		"add <code>--events FILE</code> to <code>locklab run del-wrong-client --seed 1</code> for the same events as JSON Lines",
	}
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("report lacks %q", w)
		}
	}
	if m := remoteAsset.FindString(page); m != "" {
		t.Errorf("report refers to a remote asset: %q", m)
	}
	// Every trace line is in the plain-HTML log.
	if got := strings.Count(page, "<tr><td>") + strings.Count(page, `<tr class="ev-`); got < len(res.Trace) {
		t.Errorf("event log has %d rows, the trace %d lines", got, len(res.Trace))
	}
}

func TestReportIsDeterministic(t *testing.T) {
	t.Setenv(EChartsEnv, "off")
	res, cmp := runScenario(t, "del-wrong-client")
	// Porcupine's partial linearizations of an illegal history come back in
	// varying order (its search is concurrent), so its embedded view is left
	// out of the comparison; everything locklab draws must be identical.
	viz := regexp.MustCompile(`srcdoc="[^"]*"`)
	a, b := render(t, res, cmp), render(t, res, cmp)
	if a != b {
		t.Error("one run renders to different reports")
	}
	for i := 0; i < 5; i++ {
		again, cmp2 := runScenario(t, "del-wrong-client")
		if c := render(t, again, cmp2); viz.ReplaceAllString(c, "") != viz.ReplaceAllString(a, "") {
			t.Fatal("two runs with the same seed render to different reports")
		}
	}
}

func TestSVGTimelineWithoutECharts(t *testing.T) {
	for _, env := range []string{"off", filepath.Join(t.TempDir(), "missing.js")} {
		t.Run(filepath.Base(env), func(t *testing.T) {
			t.Setenv(EChartsEnv, env)
			res, _ := runScenario(t, "gc-pause-beyond-ttl")
			page := render(t, res, nil)
			for _, w := range []string{`<svg class="tl"`, `id="tl-witness-resource"`, `id="charts-note"`} {
				if !strings.Contains(page, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			if env != "off" && !strings.Contains(page, FetchHint) {
				t.Errorf("the note does not say how to get the charts (%q)", FetchHint)
			}
			if strings.Contains(page, `<script type="application/json" data-echarts-for`) {
				t.Error("chart options written although ECharts is absent")
			}
			if m := remoteAsset.FindString(page); m != "" {
				t.Errorf("report refers to a remote asset: %q", m)
			}
		})
	}
}

const fakeECharts = `/* FAKE-ECHARTS-MARKER */ window.echarts = { init: function () { return { setOption: function () {}, resize: function () {} }; } }; var s = "</script><script>alert('x')</script>";`

func TestLocalEChartsIsInlined(t *testing.T) {
	path := filepath.Join(t.TempDir(), "echarts.min.js")
	if err := os.WriteFile(path, []byte(fakeECharts), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EChartsEnv, path)
	res, cmp := runScenario(t, "del-wrong-client")
	page := render(t, res, cmp)
	if !strings.Contains(page, "FAKE-ECHARTS-MARKER") {
		t.Fatal("the local ECharts file is not inlined")
	}
	if strings.Contains(page, "</script><script>alert('x')") {
		t.Error("the inlined file can close its <script> element")
	}
	if n := strings.Count(page, `<script type="application/json" data-echarts-for=`); n < 2 {
		t.Errorf("%d chart options, want at least 2", n)
	}
	if !strings.Contains(page, `<svg class="tl"`) {
		t.Error("the SVG timeline is missing when charts are on")
	}
	if strings.Contains(page, `id="charts-note"`) {
		t.Error("the missing-charts note is shown although ECharts is present")
	}
	if m := remoteAsset.FindString(page); m != "" {
		t.Errorf("report refers to a remote asset: %q", m)
	}
}

// hostile is a scenario whose every free-text field tries to inject markup.
const hostile = `
id: "<script>alert(1)</script>"
title: "<script>alert(1)</script>"
algorithm: set-nx-px-del
ttl: 10s
nodes: [{name: "<img src=x onerror=alert(2)>", offset: 1s}]
clients:
  count: 2
  cycles: 1
  each:
    c1: {start: 0s}
duration: 20s
faults:
  - kind: pause
    target: c1
    duration: 11s
    after: {client: c1, op: WRITE}
    note: "<script>alert(1)</script>"
narrative:
  what: "<script>alert(1)</script>"
  why: "</textarea><script>alert(1)</script>"
  fix: "<b onmouseover=alert(5)>fix</b>"
  sources:
    - "javascript:alert(3) (<script>alert(1)</script>)"
    - "https://example.com/\"><script>alert(4)</script>"
`

func TestUntrustedStringsAreEscaped(t *testing.T) {
	sc, err := scenarios.Parse("x.yaml", []byte(hostile))
	if err != nil {
		t.Fatal(err)
	}
	res, cmp, err := runner.RunCompared(sc, 1, runner.Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ec := range []string{"off", "fake"} {
		t.Run(ec, func(t *testing.T) {
			if ec == "fake" {
				path := filepath.Join(t.TempDir(), "echarts.min.js")
				if err := os.WriteFile(path, []byte("window.echarts = undefined;"), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Setenv(EChartsEnv, path)
			} else {
				t.Setenv(EChartsEnv, "off")
			}
			file := filepath.Join(t.TempDir(), "out.html")
			if err := WriteRunFile(file, res, cmp, "locklab run x.yaml --seed 1 <script>alert(1)</script>"); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			page := string(data)
			for _, bad := range []string{
				"<script>alert(1)</script>",
				"<img src=x onerror=alert(2)>",
				"<b onmouseover=alert(5)>",
				`href="javascript:`,
				`"><script>alert(4)`,
			} {
				if strings.Contains(page, bad) {
					t.Errorf("unescaped %q in the report", bad)
				}
			}
			// The text is still there, as text.
			if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Error("the hostile id is not shown as text")
			}
			// In chart options (JSON inside <script>) it is a JSON escape.
			if ec == "fake" && !strings.Contains(page, `\u003cimg src=x onerror=alert(2)\u003e`) {
				t.Error("the hostile node name is not JSON-escaped in the chart options")
			}
		})
	}
}

func TestMatrix(t *testing.T) {
	m := MatrixData{
		Note:         "100 seeds per cell.",
		Algorithms:   []string{"set-nx-px-lua", "redlock"},
		FaultClasses: []string{"pause", "clock-jump"},
		Cells: []MatrixCell{
			{Algorithm: "set-nx-px-lua", FaultClass: "pause", Runs: 100, MutualExclusion: 0, Resource: 0.4, Example: "runs/pause-7.html"},
			{Algorithm: "redlock", FaultClass: "clock-jump", Runs: 100, MutualExclusion: 1, Example: "javascript:alert(1)"},
			{Algorithm: "<b>x</b>", FaultClass: "crash", Runs: 3, Liveness: 0.5},
		},
	}
	var buf bytes.Buffer
	if err := WriteMatrix(&buf, m); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, w := range []string{`<svg class="heat"`, "R 40%", "M 100%", `href="runs/pause-7.html"`, "&lt;b&gt;x&lt;/b&gt;", "crash", "100 seeds per cell."} {
		if !strings.Contains(page, w) {
			t.Errorf("matrix lacks %q", w)
		}
	}
	for _, bad := range []string{`href="javascript:`, "<b>x</b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("matrix contains %q", bad)
		}
	}
	if m := remoteAsset.FindString(page); m != "" {
		t.Errorf("matrix refers to a remote asset: %q", m)
	}
}

func sc(id, twin string, violated bool) *scenarios.Scenario {
	s := &scenarios.Scenario{ID: id, Title: id, Twin: twin}
	if violated {
		s.Expect.MutualExclusion = checker.Violated
	}
	return s
}

func TestLessonsPairAndOrder(t *testing.T) {
	all := []*scenarios.Scenario{
		sc("zk-session-expiry-pause", "", true),
		sc("redlock-clock-jump-fenced", "redlock-clock-jump", false),
		sc("redlock-clock-jump", "redlock-clock-jump-fenced", true),
		sc("aaa-unknown", "", true),
		sc("failover-lost-replication", "", true),
		sc("del-wrong-client-fixed", "del-wrong-client", false),
		sc("del-wrong-client", "del-wrong-client-fixed", true),
		sc("gc-pause-beyond-ttl", "gc-pause-beyond-ttl-fenced", true),
		sc("setnx-expire-crash-fixed", "setnx-expire-crash", false),
		sc("setnx-expire-crash", "setnx-expire-crash-fixed", true),
		sc("redlock-crash-restart", "", true),
		sc("redlock-crash-restart-delayed", "redlock-crash-restart", false), // names its twin one way only
		sc("redlock-crash-restart-fsync", "redlock-crash-restart", false),   // a second fix
	}
	var got []string
	for _, l := range Lessons(all) {
		got = append(got, strings.Join(l.IDs(), "+"))
		if l.First.ID == "gc-pause-beyond-ttl" && l.MissingTwin != "gc-pause-beyond-ttl-fenced" {
			t.Errorf("gc-pause-beyond-ttl: MissingTwin = %q", l.MissingTwin)
		}
	}
	want := []string{
		"setnx-expire-crash+setnx-expire-crash-fixed",
		"del-wrong-client+del-wrong-client-fixed",
		"gc-pause-beyond-ttl",
		"redlock-clock-jump+redlock-clock-jump-fenced",
		"redlock-crash-restart+redlock-crash-restart-delayed+redlock-crash-restart-fsync",
		"failover-lost-replication",
		"zk-session-expiry-pause",
		"aaa-unknown",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("lessons:\n got %v\nwant %v", got, want)
	}
}

func TestCourseIndexLinksEveryLesson(t *testing.T) {
	bubblehost.Bind(t) // the catalogue has real-client scenarios
	t.Setenv(EChartsEnv, "off")
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	// The single-instance lessons are enough here; cmd/locklab's test writes
	// the whole catalogue.
	var some []*scenarios.Scenario
	for _, s := range all {
		if strings.HasPrefix(s.ID, "setnx-expire") || strings.HasPrefix(s.ID, "del-wrong-client") {
			some = append(some, s)
		}
	}
	dir := t.TempDir()
	calls := 0
	index, err := WriteCourse(dir, some, CourseOptions{Progress: func(done, total int, l Lesson, file string, err error) {
		calls++
		if err != nil {
			t.Errorf("lesson %v: %v", l.IDs(), err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Lessons the syllabus leaves out of the built course have no page.
	syl, err := DefaultSyllabus()
	if err != nil {
		t.Fatal(err)
	}
	var lessons []Lesson
	for _, l := range Lessons(some) {
		if syl.LeftOut(some)[l.First.ID] == "" {
			lessons = append(lessons, l)
		}
	}
	if calls != len(lessons) {
		t.Errorf("progress called %d times for %d lessons", calls, len(lessons))
	}
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lessons {
		if !strings.Contains(string(data), `href="`+l.File()+`"`) {
			t.Errorf("index does not link %s", l.File())
		}
		page, err := os.ReadFile(filepath.Join(dir, l.File()))
		if err != nil {
			t.Fatal(err)
		}
		for k, id := range l.IDs() {
			if !strings.Contains(string(page), `data-scenario="`+id+`"`) {
				t.Errorf("%s lacks the run of %s", l.File(), id)
			}
			if !strings.Contains(string(data), `href="`+l.File()+`#`+runPrefix(k)+`run"`) {
				t.Errorf("index does not link the run of %s", id)
			}
		}
	}
}

// A run cut short by its work budget says so beside its verdict, with the
// instant and the limit, and what the verdict then means (issue 25).
func TestReportSaysTheRunWasCutShort(t *testing.T) {
	sc, err := scenarios.Get("del-wrong-client")
	if err != nil {
		t.Fatal(err)
	}
	res, cmp, err := runner.RunCompared(sc, sc.Seed, runner.Options{KeepTrace: true, MaxWork: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped == nil {
		t.Fatal("the run was not cut short at a budget of 100")
	}
	page := render(t, res, cmp)
	for _, want := range []string{`id="stopped"`, "run cut short", "it used its work budget of 100 kernel steps", "“ok” means none happened before the cut"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	full, _, _ := runner.RunCompared(sc, sc.Seed, runner.Options{KeepTrace: true})
	if strings.Contains(render(t, full, nil), "run cut short") {
		t.Error("a run that reached its duration says it was cut short")
	}
}
