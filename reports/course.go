package reports

import (
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// EChartsFile is the name of the shared ECharts copy in a course directory.
const EChartsFile = "echarts.min.js"

// courseTraceRows caps each lesson's event logs: a lesson explains one
// failure, and the herd lesson alone would otherwise carry megabytes.
const courseTraceRows = 100

// WriteCourse writes the course into dir (created if needed): one page and
// one printable handout per lesson, a glossary, the index, and — when a
// local ECharts copy is available — that copy once, shared by every page.
// It returns the index's path. A lesson that cannot run is listed in the
// index with its error; WriteCourse then returns the index path and an
// error naming the failed lessons.
func WriteCourse(dir string, all []*scenarios.Scenario, opt CourseOptions) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot create course directory: %w", err)
	}
	run := opt.Run
	if run == nil {
		run = func(sc *scenarios.Scenario) (*runner.Result, []runner.Comparison, error) {
			return runner.RunCompared(sc, sc.Seed, runner.Options{KeepTrace: true})
		}
	}
	syl := opt.Syllabus
	if syl == nil {
		var err error
		if syl, err = DefaultSyllabus(); err != nil {
			return "", err
		}
	}
	secs, outside, _ := syl.plan(all)
	ec, err := writeCourseAssets(dir)
	if err != nil {
		return "", err
	}
	plain := echartsAsset{shared: true}
	var flat []courseLesson
	for _, sec := range secs {
		flat = append(flat, sec.Lessons...)
	}
	idx := &indexView{Title: syl.Title, Intro: syl.Intro, EChartsNote: ec.note, Outside: outside}
	var failed []string
	wroteViewer := false
	for i, cl := range flat {
		l := cl.Lesson
		sec := sectionOf(secs, cl.N)
		entry := indexEntry{N: cl.N, File: l.File(), Handout: l.HandoutFile(), Title: l.First.Title, MissingTwin: l.MissingTwin, Objectives: cl.Meta.Objectives}
		inputs, err := runLesson(run, l)
		if err == nil {
			prev, next := crumbsAround(flat, i)
			lv := newLessonView(cl, sec, inputs, prev, next, ec, newGlossaryLinker(syl.Glossary))
			for _, v := range lv.Runs {
				leavePerClientViewsOut(v)
			}
			wroteViewer = shareViewer(dir, lv, wroteViewer)
			err = writeFile(filepath.Join(dir, l.File()), func(w io.Writer) error {
				return writeLessonPage(w, lv, ec)
			})
			if err == nil {
				err = writeFile(filepath.Join(dir, l.HandoutFile()), func(w io.Writer) error {
					return writeHandout(w, lv, plain)
				})
			}
		}
		for k, in := range inputs {
			sc := in.Result.Scenario
			e := indexRun{ID: sc.ID, Title: sc.Title, Algorithm: sc.Algorithm, Replay: in.Replay, Verdict: in.Result.Report.Verdict, Matches: in.Result.Matches(), Anchor: l.File() + "#" + runPrefix(k) + "run"}
			e.Role, e.RoleClass = roleOf(sc, l.First, k)
			entry.Runs = append(entry.Runs, e)
		}
		if err != nil {
			entry.Error = err.Error()
			failed = append(failed, l.First.ID)
		}
		idx.addEntry(sec, entry)
		if opt.Progress != nil {
			opt.Progress(i+1, len(flat), l, filepath.Join(dir, l.File()), err)
		}
	}
	if err := writeFile(filepath.Join(dir, GlossaryFile), func(w io.Writer) error { return writeGlossary(w, syl, plain) }); err != nil {
		return "", err
	}
	index := filepath.Join(dir, "index.html")
	if err := writeFile(index, func(w io.Writer) error { return writeIndex(w, idx, plain) }); err != nil {
		return "", err
	}
	if len(failed) > 0 {
		return index, fmt.Errorf("%d lesson(s) could not be written: %s", len(failed), strings.Join(failed, ", "))
	}
	return index, nil
}

// writeCourseAssets writes what every page of a course directory shares,
// once: the style sheet, the script and, when available, the ECharts copy,
// which the pages then load from the directory.
func writeCourseAssets(dir string) (echartsAsset, error) {
	if err := writeSharedAssets(dir); err != nil {
		return echartsAsset{}, err
	}
	ec := loadECharts()
	if ec.ok() {
		if err := os.WriteFile(filepath.Join(dir, EChartsFile), ec.raw, 0o644); err != nil {
			return echartsAsset{}, fmt.Errorf("cannot write %s: %w", EChartsFile, err)
		}
		ec = echartsAsset{src: EChartsFile, raw: ec.raw}
	}
	ec.shared = true
	return ec, nil
}

// runLesson runs the lesson's scenarios, the failure first, and stops at
// the first that cannot run.
func runLesson(run func(*scenarios.Scenario) (*runner.Result, []runner.Comparison, error), l Lesson) ([]RunInput, error) {
	var inputs []RunInput
	for _, sc := range l.Scenarios() {
		res, cmp, err := run(sc)
		if err != nil {
			return inputs, fmt.Errorf("%s: %w", sc.ID, err)
		}
		inputs = append(inputs, RunInput{Result: res, Compared: cmp, Replay: fmt.Sprintf("locklab run %s --seed %d", sc.ID, res.Seed)})
	}
	return inputs, nil
}

// crumbsAround links the i-th lesson page to its neighbours.
func crumbsAround(flat []courseLesson, i int) (prev, next *crumb) {
	if i > 0 {
		prev = &crumb{Text: fmt.Sprintf("%d. %s", flat[i-1].N, flat[i-1].First.Title), Href: flat[i-1].File()}
	}
	if i+1 < len(flat) {
		next = &crumb{Text: fmt.Sprintf("%d. %s", flat[i+1].N, flat[i+1].First.Title), Href: flat[i+1].File()}
	}
	return prev, next
}

// shareViewer writes porcupine's viewer once per directory (wrote says
// whether it already is); each run then carries only its history.
func shareViewer(dir string, lv *lessonView, wrote bool) bool {
	for _, v := range lv.Runs {
		if v.vizViewer != "" && !wrote {
			if err := os.WriteFile(filepath.Join(dir, PorcupineFile), []byte(v.vizViewer), 0o644); err == nil {
				wrote = true
			}
		}
		v.VizShared = wrote && v.VizData != ""
	}
	return wrote
}

// GlossaryFile is the course's glossary page.
const GlossaryFile = "glossary.html"

func sectionOf(secs []courseSection, n int) courseSection {
	for _, s := range secs {
		for _, l := range s.Lessons {
			if l.N == n {
				return s
			}
		}
	}
	return courseSection{}
}

func runPrefix(k int) string { return string(rune('a'+k)) + "-" }

// roleOf names a scenario's part in its lesson: the failure (shown first),
// a fix (a twin that violates less), or just a twin.
func roleOf(sc, first *scenarios.Scenario, k int) (string, string) {
	if k == 0 {
		if expectsViolation(sc) {
			return "the failure", "broken"
		}
		return "scenario", ""
	}
	mine, theirs := violations(sc), violations(first)
	fewer := len(mine) < len(theirs)
	for p := range mine {
		if !theirs[p] {
			fewer = false
		}
	}
	if fewer {
		return "the fix", "fixed"
	}
	return "twin", ""
}

// lessonView is a lesson page (and its handout).
type lessonView struct {
	N          int
	Section    string
	SectionN   int
	SectionID  string
	Title      string
	ID         string
	Objectives []string
	Questions  []string
	Try        []string
	Sources    []sourceLink
	Story      narrativeView
	Runs       []*runView
	Timelines  []*timeline // on one time scale, with the mechanism
	// HandoutTimeline is the failure's timeline for print: no tooltips
	// (paper has no hover), so the handout stays small.
	HandoutTimeline *timeline
	Herd            *herdChart
	Handout         string
	Prev            *crumb
	Next            *crumb
	Rows            []lessonRow
	EChartsNote     string
	HandoutRuns     []*runView
	// The exercises and the instructor's notes (exercises.go).
	Predict    predictExercise
	Edit       *editExercise
	Instructor []string
	// Answers answer the questions to discuss, for the instructor.
	Answers []string
	// Linked is the lesson's student text with glossary terms linked.
	Linked struct {
		Objectives, Questions []template.HTML
		What, Why, Fix        template.HTML
	}
	HandoutLines []string
}

type lessonRow struct {
	Property string
	Got      []string
}

func newLessonView(cl courseLesson, sec courseSection, inputs []RunInput, prev, next *crumb, ec echartsAsset, gl *glossaryLinker) *lessonView {
	first := inputs[0].Result.Scenario
	lv := &lessonView{N: cl.N, Section: sec.Title, SectionN: sec.N, SectionID: sec.ID, Title: first.Title, ID: first.ID, Prev: prev, Next: next,
		Objectives: cl.Meta.Objectives, Questions: cl.Meta.Questions, Handout: cl.HandoutFile(), EChartsNote: ec.note}
	lv.Story = narrativeView{What: first.Narrative.What, Why: first.Narrative.Why, Fix: first.Narrative.Fix}
	seen := map[string]bool{}
	for _, src := range append(append([]string(nil), first.Narrative.Sources...), cl.Meta.Sources...) {
		sl := parseSource(src)
		key := sl.URL
		if key == "" {
			key = sl.Text
		}
		if !seen[key] {
			seen[key] = true
			lv.Sources = append(lv.Sources, sl)
		}
	}
	var end time.Duration
	for _, in := range inputs {
		end = max(end, in.Result.End)
	}
	var herd []herdRun
	for k, in := range inputs {
		v := newRunView(in.Result, in.Compared, in.Replay, runPrefix(k), ec.ok())
		v.ChartsNote = ec.note
		v.Compact = true
		capTrace(v, courseTraceRows)
		v.Heading, v.HeadingClass = roleOf(in.Result.Scenario, first, k)
		for j, other := range inputs {
			if j != k && other.Result.Scenario.ID == v.Twin {
				v.TwinHref = "#" + runPrefix(j) + "run"
			}
		}
		lv.Runs = append(lv.Runs, v)
		tl := buildTimeline(in.Result, runPrefix(k)+"cmp-", 0, end+end/40, false)
		tl.Caption = fmt.Sprintf("%s (%s): %s", in.Result.Scenario.ID, v.Heading, in.Result.Scenario.Title)
		lv.Timelines = append(lv.Timelines, tl)
		lv.Try = append(lv.Try, fmt.Sprintf("locklab run %s", in.Result.Scenario.ID))
		herd = append(herd, herdRuns(in)...)
	}
	if len(inputs) > 0 {
		id := inputs[0].Result.Scenario.ID
		lv.Try = append(lv.Try,
			fmt.Sprintf("locklab run %s --seed 2", id),
			fmt.Sprintf("locklab run %s --report %s.html", id, id),
			fmt.Sprintf("locklab run %s --json", id))
	}
	lv.Try = append(lv.Try, cl.Meta.Try...)
	lv.Herd = newHerdChart(herd)
	if len(lv.Timelines) > 0 {
		lv.HandoutTimeline = withoutTooltips(lv.Timelines[0])
	}
	for _, prop := range []string{"mutual exclusion", "resource safety", "liveness"} {
		row := lessonRow{Property: prop}
		for _, v := range lv.Runs {
			for _, vr := range v.Verdicts {
				if vr.Property == prop {
					row.Got = append(row.Got, vr.Got)
				}
			}
		}
		lv.Rows = append(lv.Rows, row)
	}
	lv.Predict = newPredict(first, cl.Meta.Predict)
	var twins []*scenarios.Scenario
	for _, in := range inputs[1:] {
		twins = append(twins, in.Result.Scenario)
	}
	lv.Edit = newEdit(first, twins, cl.Meta.Edit)
	lv.Instructor = cl.Meta.Instructor
	lv.Answers = cl.Meta.Answers
	// Glossary links, in reading order, so each term links where the
	// page first uses it.
	lv.Linked.Objectives = gl.linkAll(lv.Objectives)
	lv.Linked.What = gl.link(lv.Story.What)
	lv.Linked.Why = gl.link(lv.Story.Why)
	lv.Linked.Fix = gl.link(lv.Story.Fix)
	lv.Linked.Questions = gl.linkAll(lv.Questions)
	return lv
}

func writeLessonPage(w io.Writer, lv *lessonView, ec echartsAsset) error {
	p := newPage(fmt.Sprintf("Lesson %d: %s — locklab course", lv.N, lv.ID), ec)
	p.Crumbs = []crumb{{Text: "locklab course", Href: "index.html"}, {Text: lv.Section, Href: "index.html#section-" + lv.SectionID}, {Text: fmt.Sprintf("lesson %d", lv.N)}}
	p.Lesson = lv
	p.Runs = lv.Runs
	return pages.ExecuteTemplate(w, "lesson-page", p)
}

// writeHandout writes the lesson's printable page: objectives, the story,
// the failure's timeline, the verdicts of every run, questions and
// commands. Nothing on it needs a script.
func writeHandout(w io.Writer, lv *lessonView, ec echartsAsset) error {
	p := newPage(fmt.Sprintf("Handout %d: %s — locklab course", lv.N, lv.ID), ec)
	p.ReportJS = ""
	p.Crumbs = []crumb{{Text: "locklab course", Href: "index.html"}, {Text: fmt.Sprintf("lesson %d", lv.N), Href: safeFileName(lv.ID) + ".html"}, {Text: "handout"}}
	p.Lesson = lv
	p.Handout = true
	return pages.ExecuteTemplate(w, "handout-page", p)
}

func writeGlossary(w io.Writer, syl *Syllabus, ec echartsAsset) error {
	p := newPage("Glossary — locklab course", ec)
	p.Crumbs = []crumb{{Text: "locklab course", Href: "index.html"}, {Text: "glossary"}}
	p.Glossary = syl.Glossary
	return pages.ExecuteTemplate(w, "glossary-page", p)
}

// indexView is the course's table of contents, by section.
type indexView struct {
	Title, Intro string
	Sections     []indexSection
	EChartsNote  string
	// Outside are the lessons the course leaves out, named with the
	// command that runs them.
	Outside []outsideEntry
}

type indexSection struct {
	N       int
	ID      string
	Title   string
	Intro   string
	Entries []indexEntry
}

func (v *indexView) addEntry(sec courseSection, e indexEntry) {
	if n := len(v.Sections); n == 0 || v.Sections[n-1].ID != sec.ID {
		v.Sections = append(v.Sections, indexSection{N: sec.N, ID: sec.ID, Title: sec.Title, Intro: sec.Intro})
	}
	s := &v.Sections[len(v.Sections)-1]
	s.Entries = append(s.Entries, e)
}

type indexEntry struct {
	N           int
	File        string
	Handout     string
	Title       string
	Objectives  []string
	Runs        []indexRun
	MissingTwin string
	Error       string
}

type indexRun struct {
	ID, Title, Algorithm string
	Role, RoleClass      string
	Replay               string
	Verdict              checker.Verdict
	Matches              bool
	Anchor               string
}

func writeIndex(w io.Writer, idx *indexView, ec echartsAsset) error {
	p := newPage(idx.Title+" — locklab course", ec)
	p.Index = idx
	return pages.ExecuteTemplate(w, "index-page", p)
}

// withoutTooltips copies a timeline with every shape's tooltip removed.
func withoutTooltips(t *timeline) *timeline {
	c := *t
	for _, layer := range []*[]shape{&c.Back, &c.Plot, &c.Over} {
		shapes := append([]shape(nil), (*layer)...)
		for i := range shapes {
			shapes[i].Title = ""
		}
		*layer = shapes
	}
	return &c
}

// courseClientViews is the most clients a course page draws one row each
// for in the interactive views. Past it (the herd lesson's 101 clients) a
// row per client in the holding chart and in porcupine's view is unreadable
// and heavy; the lesson's point is then made by its aggregate charts
// (notifications per waiter), and the single-run report keeps both views.
const courseClientViews = 50

func leavePerClientViewsOut(v *runView) {
	if v.clients <= courseClientViews {
		return
	}
	charts := v.Charts[:0]
	for _, c := range v.Charts {
		if !strings.HasSuffix(c.ID, "chart-holding") {
			charts = append(charts, c)
		}
	}
	v.Charts = charts
	v.Viz, v.VizData, v.vizViewer = "", "", ""
	v.VizErr = fmt.Sprintf("left out of the course for a run of %d clients (one row each would be unreadable); `%s --report out.html` draws it", v.clients, v.Replay)
}
