package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/bubblehost"
)

// The mechanism is derived from the trace; these tests pin what it says
// about the catalogue's classic stories.

func keysOn(m *mechanism, node string) []keySpan { return m.Keys[node] }

func TestMechanismRedlockClockJump(t *testing.T) {
	res, _ := runScenario(t, "redlock-clock-jump")
	m := deriveMechanism(res)
	if !m.Redlock {
		t.Fatal("not recognised as Redlock")
	}
	// c1's key on C expires when C's clock jumps at 1s, nine seconds before
	// its TTL would have run out on a true clock; on A it lives until c1
	// releases it.
	var c1OnC *keySpan
	for _, k := range keysOn(m, "C") {
		if k.Owner == "c1" {
			c1OnC = &k
			break
		}
	}
	if c1OnC == nil {
		t.Fatalf("no key of c1 on C: %+v", keysOn(m, "C"))
	}
	if c1OnC.End != "expired" || c1OnC.To != time.Second || c1OnC.TTL != 10*time.Second || c1OnC.Nominal-c1OnC.To < 9*time.Second {
		t.Errorf("c1's key on C: %+v; want it expired at 1s (the jump), 10s TTL", *c1OnC)
	}
	if a := keysOn(m, "A"); len(a) == 0 || a[0].Owner != "c1" || a[0].End != "released" {
		t.Errorf("A's keys: %+v; want c1's, released", a)
	}
	// Two granted attempts, each with exactly three votes: c1 from A, B, C
	// and c2 from C, D, E.
	want := map[string]string{"c1": "A B C", "c2": "C D E"}
	granted := 0
	for _, a := range m.Attempts {
		if !a.Held {
			continue
		}
		granted++
		var yes []string
		for _, v := range a.Votes {
			if v.Got == "yes" {
				yes = append(yes, v.Node)
			}
		}
		sortStrings(yes)
		if got := strings.Join(yes, " "); got != want[a.Client] {
			t.Errorf("%s's votes: %s, want %s", a.Client, got, want[a.Client])
		}
		if a.Validity <= a.To || a.Validity > a.To+10*time.Second {
			t.Errorf("%s's validity %s is not within the TTL after %s", a.Client, a.Validity, a.To)
		}
	}
	if granted != 2 {
		t.Errorf("%d granted attempts, want 2", granted)
	}
	// The page draws the bar snapping short and the validity windows.
	html := render(t, res, nil)
	for _, w := range []string{`data-label="key C c1 0.002s 1.000s expired"`, `class="key-nominal"`, `class="validity"`, "expired early", "3/5 votes (A B C), quorum 3"} {
		if !strings.Contains(html, w) {
			t.Errorf("report lacks %q", w)
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestMechanismFailoverLosesTheReplication(t *testing.T) {
	res, _ := runScenario(t, "failover-lost-replication")
	m := deriveMechanism(res)
	if len(m.Repl) == 0 || !m.Repl[0].Lost || m.Repl[0].From != "A" || m.Repl[0].To != "B" || !m.Repl[0].HasSent {
		t.Fatalf("replication: %+v; want A→B lost, with the master's write found", m.Repl)
	}
	if len(m.Promotions) != 1 || m.Promotions[0].Node != "B" || m.Promotions[0].Old != "A" || m.Promotions[0].At != time.Second {
		t.Errorf("promotions: %+v; want B in place of A at 1s", m.Promotions)
	}
	if a := keysOn(m, "A"); len(a) != 1 || a[0].Owner != "c1" || a[0].End != "crash" {
		t.Errorf("A's keys: %+v; want c1's, lost in the crash", a)
	}
	if b := keysOn(m, "B"); len(b) == 0 || b[0].Owner != "c2" || b[0].From < time.Second {
		t.Errorf("B's keys: %+v; want c2's after the promotion", b)
	}
	html := render(t, res, nil)
	for _, w := range []string{"replication to B lost", "promoted to master", `class="repl-lost"`} {
		if !strings.Contains(html, w) {
			t.Errorf("report lacks %q", w)
		}
	}
}

// zk-session-expiry-pause runs the real client on a one-server ensemble
// (issue 21 item 5): the lanes come from its trace. c1's session expires
// while it is paused; its node goes with it and the waiters are told.
func TestMechanismZooKeeperSessions(t *testing.T) {
	bubblehost.Bind(t) // real go-zookeeper client
	res, _ := runScenario(t, "zk-session-expiry-pause")
	m := deriveMechanism(res)
	if !m.ZK {
		t.Fatal("a gozk run is not treated as ZooKeeper")
	}
	if len(m.Expiries) != 1 || m.Expiries[0].Client != "c1" {
		t.Fatalf("expiries: %+v; want c1's session", m.Expiries)
	}
	exp := m.Expiries[0].At
	if len(m.Znodes) != 3 || m.Znodes[0].Owner != "c1" || m.Znodes[0].End != "session expired" || m.Znodes[0].To != exp {
		t.Errorf("znodes: %+v; want c1's first, deleted with its session", m.Znodes)
	}
	if n := m.NotifiesPerClient(); n["c2"] != 1 || n["c3"] != 1 || n["c1"] != 0 {
		t.Errorf("notifications per client: %v; want one each to c2 and c3", n)
	}
}

// The ensemble's lanes come from the real client's trace: c1, on the
// minority server zk1, loses its session to the leader at 6 s while zk1
// keeps it connected until zk1 stops serving at 11 s; its lock node goes
// with the session and c2, watching it, is told.
func TestMechanismZooKeeperEnsemble(t *testing.T) {
	bubblehost.Bind(t) // real go-zookeeper client
	res, _ := runScenario(t, "zk-ensemble-minority-partition")
	m := deriveMechanism(res)
	if !m.ZK {
		t.Fatal("a gozk run is not treated as ZooKeeper")
	}
	if len(m.Expiries) != 1 || m.Expiries[0].Client != "c1" || m.Expiries[0].At != 6*time.Second {
		t.Fatalf("expiries: %+v; want c1's session at 6s", m.Expiries)
	}
	if len(m.Znodes) != 2 {
		t.Fatalf("znodes: %+v; want c1's and c2's lock nodes", m.Znodes)
	}
	z0, z1 := m.Znodes[0], m.Znodes[1]
	if z0.Path != "/locks/lock/_c_…-lock-0000000000" || z0.Short != "0" || z0.Owner != "c1" || z0.End != "session expired" || z0.To != 6*time.Second {
		t.Errorf("first znode: %+v; want c1's #0, deleted with its session at 6s", z0)
	}
	if z1.Short != "1" || z1.Owner != "c2" || z1.End != "deleted" || z1.To <= 7*time.Second {
		t.Errorf("second znode: %+v; want c2's #1, deleted by its release after 7s", z1)
	}
	if len(m.Notifies) != 1 || m.Notifies[0].Client != "c2" || m.Notifies[0].Event != "NodeDeleted /locks/lock/_c_…-lock-0000000000" || m.Notifies[0].At <= 6*time.Second {
		t.Errorf("notifications: %+v; want c2 told of #0's deletion just after 6s", m.Notifies)
	}
	var states []string
	for _, s := range m.Sessions {
		states = append(states, fmt.Sprintf("%s %s %s", s.Client, s.State, checker.Sec(s.From)))
	}
	// The quorum expires c1's session at 6 s while zk1, cut off from it,
	// still answers c1 until it stops serving (issue 34: the lane showed
	// CONNECTED across the expiry).
	want := "c1 CONNECTED zk1 0.006s, c1 LOST (still connected to zk1) 6.000s, c1 LOST 11.001s, c2 CONNECTED zk2 0.006s"
	if got := strings.Join(states, ", "); got != want {
		t.Errorf("connection states: %s; want %s (c1 stays connected to zk1 long after the expiry)", got, want)
	}
	var roles []string
	for _, s := range m.Servers {
		roles = append(roles, fmt.Sprintf("%s %s %s", s.Server, s.State, checker.Sec(s.From)))
	}
	want = "zk1 follower 0.000s, zk1 not serving 11.000s, zk2 follower 0.000s, zk3 leader 0.000s"
	if got := strings.Join(roles, ", "); got != want {
		t.Errorf("server roles: %s; want %s (zk1 stops serving 10 s after the cut, syncLimit × tickTime)", got, want)
	}
	html := render(t, res, nil)
	for _, s := range []string{"CONNECTED zk1", "server expires the session", "connected to a server (named)", "znode 0 c1 0.034s session expired", "role zk1 not serving 11.000s"} {
		if !strings.Contains(html, s) {
			t.Errorf("the report does not show %q", s)
		}
	}
}

func TestMechanismReentrantHoldCount(t *testing.T) {
	res, _ := runScenario(t, "reentrant-retry-double-count")
	m := deriveMechanism(res)
	k := keysOn(m, "A")
	if len(k) == 0 || k[0].Owner != "c1" || k[0].Count != 1 || k[0].End != "expired" {
		t.Fatalf("A's keys: %+v; want c1's left with count 1 after its one release, expiring", k)
	}
}

func TestFencingComparisonIsDrawn(t *testing.T) {
	res, _ := runScenario(t, "gc-pause-beyond-ttl-fenced")
	html := render(t, res, nil)
	if !strings.Contains(html, "rejects c1: 33 &lt; 34 ✗") {
		t.Error(`the store row does not show the rejected write as "33 < 34"`)
	}
	m := deriveMechanism(res)
	if len(m.Fences) < 2 || m.Fences[0].FencingToken != 33 || m.Fences[1].FencingToken != 34 {
		t.Errorf("fencing tokens issued: %+v; want 33 then 34", m.Fences)
	}
}

func TestHerdNotificationsPerWaiter(t *testing.T) {
	bubblehost.Bind(t) // real go-zookeeper client
	res, cmp := runScenario(t, "zk-herd-effect")
	runs := herdRuns(RunInput{Result: res, Compared: cmp})
	total := map[string]int{}
	for _, r := range runs {
		for _, c := range r.Counts {
			total[r.Algorithm] += c
		}
	}
	if total["gozk-simple"] != 5050 || total["gozk-queue"] != 100 {
		t.Errorf("notifications: %v; want 5050 for gozk-simple, 100 for gozk-queue", total)
	}
	if newHerdChart(runs) == nil {
		t.Error("no herd chart")
	}
}

func TestNodeClockInverse(t *testing.T) {
	h := runner.Host{Name: "C", Offset: time.Second, Clock: []sim.ClockChange{{At: 2 * time.Second, Jump: 5 * time.Second}}}
	c := newNodeClock(h, 20*time.Second)
	if got := c.local(time.Second); got != 2*time.Second {
		t.Errorf("local(1s) = %s, want 2s", got)
	}
	// A deadline of 4s local: before the jump the clock reads 3s at 2s true;
	// the jump takes it to 8s, so the deadline passes at the jump.
	if got := c.trueAt(0, 4*time.Second); got != 2*time.Second {
		t.Errorf("trueAt(4s) = %s, want 2s (the jump)", got)
	}
	// A deadline of 10s local passes at true 4s (offset 6s after the jump).
	if got := c.trueAt(0, 10*time.Second); got != 4*time.Second {
		t.Errorf("trueAt(10s) = %s, want 4s", got)
	}
}

func TestOpenEndedFaultsReachTheEnd(t *testing.T) {
	res, _ := runScenario(t, "redlock-clock-jump")
	html := render(t, res, nil)
	end := checker.Sec(res.End)
	if !strings.Contains(html, `data-label="fault partition c1 0.000s `+end+`"`) {
		t.Errorf("the permanent partition of c1 is not drawn to the end of the run (%s)", end)
	}
	if !strings.Contains(html, "end of run (never heals)") {
		t.Error("the fault table does not say the partition never heals")
	}
}

// The course file and the catalogue's course: blocks agree: every listed
// id is a scenario, every listed lesson has its objectives and questions
// in one of its scenarios' files and does not say it is outside, and the
// sections are in teaching order.
func TestSyllabusCoversTheCatalogue(t *testing.T) {
	syl, err := DefaultSyllabus()
	if err != nil {
		t.Fatal(err)
	}
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	secs, outside, problems := syl.plan(all)
	for _, p := range problems {
		t.Error(p)
	}
	var titles []string
	for _, s := range secs {
		titles = append(titles, s.Title)
		for _, l := range s.Lessons {
			if len(l.Meta.Objectives) == 0 || len(l.Meta.Questions) == 0 {
				t.Errorf("lesson %s has no objectives or no questions", l.First.ID)
			}
			// Issue 34, item 7: the instructor notes answer every
			// question to discuss, one answer per question.
			if len(l.Meta.Answers) != len(l.Meta.Questions) {
				t.Errorf("lesson %s has %d answers for its %d questions", l.First.ID, len(l.Meta.Answers), len(l.Meta.Questions))
			}
		}
	}
	want := "One Redis node|Leases and release bugs|Replication and failover|Redlock and clocks|ZooKeeper sessions|Fencing|Semaphores and reader-writer locks|Database locks|SQL Server application locks|etcd leases|File-system locks"
	if got := strings.Join(titles, "|"); got != want {
		t.Errorf("sections: %s\nwant:     %s", got, want)
	}
	// A lesson no section lists is simply outside the course (a new
	// scenario needs no other file); the index names it.
	if len(outside) == 0 {
		t.Error("no lesson is outside the course; the index's list of them is untested")
	}
	if len(syl.Glossary) < 10 {
		t.Errorf("%d glossary entries", len(syl.Glossary))
	}
}

// plan names what makes a course inconsistent, and a lesson no section
// lists is outside the course with its notes' reason or the default.
func TestSyllabusPlanProblems(t *testing.T) {
	mk := func(id, twin string, notes *scenarios.LessonNotes) *scenarios.Scenario {
		return &scenarios.Scenario{ID: id, Title: id, Twin: twin, Course: notes}
	}
	all := []*scenarios.Scenario{
		mk("a", "a-fixed", &scenarios.LessonNotes{Objectives: []string{"o"}}),
		mk("a-fixed", "a", &scenarios.LessonNotes{Objectives: []string{"p"}}),
		mk("b", "", nil),
		mk("c", "", &scenarios.LessonNotes{Outside: "an extension of b"}),
		mk("d", "", nil),
	}
	syl := &Syllabus{Sections: []SyllabusSection{{ID: "s", Title: "S", Lessons: []string{"a", "b", "c", "zz", "a-fixed"}}}}
	secs, outside, problems := syl.plan(all)
	want := []string{
		"lesson a: both a and a-fixed have a course: block; one scenario of a lesson carries it",
		"lesson b is listed in section s but no scenario of it has a course: block",
		`lesson c is listed in section s but its course.outside says it is not: "an extension of b"`,
		`section s lists "zz", which is no scenario of the catalogue`,
		`section s lists "a-fixed", whose lesson is already listed`,
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if len(secs) != 1 || len(secs[0].Lessons) != 3 {
		t.Fatalf("sections %+v", secs)
	}
	if len(outside) != 1 || outside[0].IDs[0] != "d" || outside[0].Why != notListed {
		t.Errorf("outside %+v, want d, %q", outside, notListed)
	}
	syl.Sections[0].Lessons = []string{"a"}
	if got := syl.LeftOut(all); got["c"] != "an extension of b" || got["d"] != notListed || got["a"] != "" {
		t.Errorf("LeftOut %v", got)
	}
}

func TestParseSyllabusErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"sections:\n  - title: A\n    lessons: [x, x]\n", `sections[0].lessons[1]: "x" is already a lesson`},
		{"sections:\n  - title: A\n    lesons: []\n", "field lesons not found"},
		{"sections:\n  - lessons: []\n", "sections[0].title: expected a title"},
		// Lesson material is in the scenario files now.
		{"sections:\n  - title: A\n    lessons:\n      - scenario: x\n        objectives: [o]\n", "cannot unmarshal"},
	} {
		_, err := ParseSyllabus("c.yaml", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "c.yaml") {
			t.Errorf("%q: error %v; want %q", c.in, err, c.want)
		}
	}
}

// lessonPageBudget caps each page of the course (a lesson, its handout,
// the index): a lesson is one file's worth of teaching and must open fast
// from a memory stick. The largest page when the budget was set,
// sentinel-split-brain.html, was 435,286 bytes; the budget leaves room for
// a larger lesson without letting one run's trace swell a page unnoticed.
// The course as a whole is not capped (a new lesson adds its pages); its
// total is logged.
const lessonPageBudget = 600_000

// Every course page fits lessonPageBudget; ECharts is written once and
// linked (not inlined) by every lesson, and is not lesson material; a
// single run's report still carries everything inline. The same build
// checks the lessons' exercises (checkCourseApparatus).
func TestCourseSizeAndSharedAssets(t *testing.T) {
	bubblehost.Bind(t) // the catalogue has real-client scenarios
	dir := t.TempDir()
	ech := filepath.Join(dir, "big-echarts.js")
	// A stand-in as large as ECharts 5 (about 1 MB).
	stub := "window.echarts = { init: function (el) { return { setOption: function () {}, resize: function () {} }; } };\n/*" + strings.Repeat("x", 1_030_000) + "*/\n"
	if err := os.WriteFile(ech, []byte(stub), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EChartsEnv, ech)
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "course")
	if _, err := WriteCourse(out, all, CourseOptions{}); err != nil {
		t.Fatal(err)
	}
	var total, largest int64
	var largestName string
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, _ := e.Info()
		// The ECharts copy is one shared asset of the whole course (a
		// library, the same for every course), not lesson material.
		if e.Name() != EChartsFile {
			total += info.Size()
			if info.Size() > largest {
				largest, largestName = info.Size(), e.Name()
			}
			if info.Size() > lessonPageBudget {
				t.Errorf("%s takes %d bytes, over the budget of %d bytes per page", e.Name(), info.Size(), lessonPageBudget)
			}
		}
		if strings.HasSuffix(e.Name(), ".html") && e.Name() != PorcupineFile {
			data, _ := os.ReadFile(filepath.Join(out, e.Name()))
			if strings.Contains(string(data), strings.Repeat("x", 1000)) {
				t.Errorf("%s inlines ECharts", e.Name())
			}
			// The scenario as YAML on a page is the run's setup, never
			// the lesson's notes (instructor notes stay off handouts).
			if strings.Contains(string(data), "\ncourse:\n  objectives:") {
				t.Errorf("%s shows a scenario's course: block", e.Name())
			}
			if !strings.Contains(string(data), `href="./locklab.css"`) {
				t.Errorf("%s does not link the shared style sheet", e.Name())
			}
		}
	}
	t.Logf("the course's lesson material takes %d bytes in %d files; the largest is %s, %d bytes (budget %d per page)", total, len(entries), largestName, largest, lessonPageBudget)
	for _, f := range []string{EChartsFile, "locklab.css", "locklab.js", PorcupineFile, GlossaryFile, "index.html", "zk-herd-effect-handout.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("course lacks %s", f)
		}
	}
	checkCourseApparatus(t, out, all)
	herd, _ := os.ReadFile(filepath.Join(out, "zk-herd-effect.html"))
	// Issue 21: a lesson says how to get its run's events as data.
	if !strings.Contains(string(herd), "add <code>--events FILE</code> to <code>locklab run zk-herd-effect --seed ") {
		t.Error("the lesson's event log does not say how to write the events as JSON Lines")
	}
	if len(herd) > 400_000 {
		t.Errorf("the herd lesson is %d bytes", len(herd))
	}
	// Its 101-client runs leave the per-client views out, and say why.
	if n := strings.Count(string(herd), "left out of the course for a run of 101 clients"); n != 2 {
		t.Errorf("the herd lesson explains %d omitted porcupine views, want 2", n)
	}
	if strings.Contains(string(herd), "chart-holding") {
		t.Error("the herd lesson still draws a holding chart of 101 rows")
	}

	res, cmp := runScenario(t, "del-wrong-client")
	single := render(t, res, cmp)
	for _, bad := range []string{`<script src=`, `<link rel="stylesheet"`, `src="porcupine.html"`} {
		if strings.Contains(single, bad) {
			t.Errorf("a single run report refers to an outside file: %s", bad)
		}
	}
	if !strings.Contains(single, strings.Repeat("x", 1000)) {
		t.Error("a single run report does not inline ECharts")
	}
}
