package reports

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

func TestScenarioChangesNameWhatTheFixChanges(t *testing.T) {
	for _, c := range []struct {
		broken, fixed string
		want          []string
	}{
		{"del-wrong-client", "del-wrong-client-fixed", []string{"algorithm: set-nx-px-del → set-nx-px-lua", "expect.resource: violated → ok"}},
		{"redlock-clock-jump", "redlock-clock-jump-fenced", []string{"expect.resource: violated → ok", "nodes[5]: add {name: T, role: tokens}", "params: add {token_source: incr}", "resource.token_check: none → '>'"}},
		// A fault's note explains the fault; it is not a change to make.
		{"setnx-expire-crash", "setnx-expire-crash-fixed", []string{"algorithm: setnx-expire → set-nx-px-lua", "expect.liveness: violated → ok", "faults[0].after.op: SETNX → SET"}},
	} {
		a, err := scenarios.Get(c.broken)
		if err != nil {
			t.Fatal(err)
		}
		b, err := scenarios.Get(c.fixed)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, st := range scenarioChanges(a, b) {
			got = append(got, st.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s → %s: changes %q; want %q", c.broken, c.fixed, got, c.want)
		}
	}
}

func TestGlossaryLinksFirstMentionLongestTermFirst(t *testing.T) {
	gl := newGlossaryLinker([]GlossaryEntry{{Term: "Token"}, {Term: "Fencing token"}, {Term: "SUSPENDED and LOST"}, {Term: "TTL"}})
	got := string(gl.link(`A fencing token <b> beats a TTL; the TTL again, and a token. LOST & SUSPENDED.`))
	want := `A <a class="term" href="glossary.html#term-fencing-token">fencing token</a> &lt;b&gt; beats a <a class="term" href="glossary.html#term-ttl">TTL</a>; the TTL again, and a <a class="term" href="glossary.html#term-token">token</a>. <a class="term" href="glossary.html#term-suspended-and-lost">LOST</a> &amp; SUSPENDED.`
	if got != want {
		t.Errorf("linked:\n%s\nwant:\n%s", got, want)
	}
	// The page's state carries over: a term linked once is not linked again.
	if again := string(gl.link("TTL")); again != "TTL" {
		t.Errorf("second page text links again: %s", again)
	}
}

// checkCourseApparatus checks a built course directory (issue 21, item 4):
// every lesson page has a predict-then-run exercise whose answer is the
// scenario's own expectation, an edit exercise answered by its fixed twin
// when it has one, instructor notes that the handout leaves out, and
// glossary links that land on a term; the student text uses "token" for
// fencing tokens only and carries no project-internal wording.
func checkCourseApparatus(t *testing.T, dir string, all []*scenarios.Scenario) {
	t.Helper()
	syl, err := DefaultSyllabus()
	if err != nil {
		t.Fatal(err)
	}
	glossary, err := os.ReadFile(filepath.Join(dir, GlossaryFile))
	if err != nil {
		t.Fatal(err)
	}
	secs, _, _ := syl.plan(all)
	for _, lessonPage := range []string{"zk-ensemble-leader-crash.html", "zk-ensemble-minority-partition-stop.html"} {
		if _, err := os.Stat(filepath.Join(dir, lessonPage)); err != nil {
			t.Errorf("the course has no page %s: %v", lessonPage, err)
		}
	}
	answer := regexp.MustCompile(`(?s)<summary>Expected verdict</summary><ul>(.*?)</ul>`)
	item := regexp.MustCompile(`<li>([a-z ]+): <span class="pill [a-z]+">([a-z]+)</span></li>`)
	termLink := regexp.MustCompile(`href="glossary.html#([a-z0-9-]+)"`)
	for _, sec := range secs {
		for _, cl := range sec.Lessons {
			if len(cl.Meta.Instructor) == 0 {
				t.Errorf("lesson %s has no instructor notes in its scenario's course: block", cl.First.ID)
			}
			data, err := os.ReadFile(filepath.Join(dir, cl.File()))
			if err != nil {
				t.Errorf("lesson %s: %v", cl.First.ID, err)
				continue
			}
			page := string(data)
			m := answer.FindStringSubmatch(page)
			if m == nil {
				t.Errorf("lesson %s has no predict-then-run exercise with an answer", cl.First.ID)
				continue
			}
			got := map[string]string{}
			for _, it := range item.FindAllStringSubmatch(m[1], -1) {
				got[it[1]] = it[2]
			}
			e := cl.First.Expect
			for prop, want := range map[string]checker.Status{"mutual exclusion": e.MutualExclusion, "resource safety": e.Resource, "liveness": e.Liveness} {
				if string(want) != got[prop] {
					t.Errorf("lesson %s: the predict exercise answers %s %q; the scenario expects %q", cl.First.ID, prop, got[prop], want)
				}
			}
			// The answer is the fix that leaves the fewest properties
			// violated (PgBouncer's session pooling, not its reset).
			var fixed *scenarios.Scenario
			for _, tw := range cl.Twins {
				if _, class := roleOf(tw, cl.First, 1); class == "fixed" && (fixed == nil || len(violations(tw)) < len(violations(fixed))) {
					fixed = tw
				}
			}
			if fixed != nil && !strings.Contains(page, "One answer: the fixed twin "+fixed.ID+"</summary>") {
				t.Errorf("lesson %s: the edit exercise does not answer with its fixed twin %s", cl.First.ID, fixed.ID)
			}
			// A fenced fix is taught as what it is: the page never
			// promises "no violation" when mutual exclusion stays lost.
			if fixed != nil && fixed.Expect.MutualExclusion == checker.Violated {
				if strings.Contains(page, "reports no violation") || !strings.Contains(page, "reports the resource safe while mutual exclusion is still violated") {
					t.Errorf("lesson %s: its fix %s still violates mutual exclusion, and the edit exercise does not say so", cl.First.ID, fixed.ID)
				}
			}
			if len(cl.Meta.Instructor) > 0 && !strings.Contains(page, "<summary>Instructor notes</summary>") {
				t.Errorf("lesson %s: the page does not carry its instructor notes", cl.First.ID)
			}
			if len(cl.Meta.Answers) > 0 && !strings.Contains(page, "<b>Answers to the questions to discuss</b>") {
				t.Errorf("lesson %s: the instructor notes do not answer its questions", cl.First.ID)
			}
			handout, _ := os.ReadFile(filepath.Join(dir, cl.HandoutFile()))
			if strings.Contains(string(handout), "Instructor notes") || strings.Contains(string(handout), "One answer:") || strings.Contains(string(handout), "Answers to the questions") {
				t.Errorf("lesson %s: the handout gives away answers or instructor notes", cl.First.ID)
			}
			for _, l := range termLink.FindAllStringSubmatch(page, -1) {
				if !strings.Contains(string(glossary), `id="`+l[1]+`"`) {
					t.Errorf("lesson %s links to glossary anchor %s, which the glossary page does not have", cl.First.ID, l[1])
				}
			}
		}
	}
	checkStudentWording(t, syl, all)
}

// checkStudentWording: one meaning for "token" (a fencing token; the random
// value in a lock key is the lock value), and none of the project's
// internal wording in what students read.
func checkStudentWording(t *testing.T, syl *Syllabus, all []*scenarios.Scenario) {
	t.Helper()
	var texts []string
	add := func(where string, s ...string) {
		for _, x := range s {
			texts = append(texts, where+": "+html.UnescapeString(x))
		}
	}
	add("course", syl.Intro)
	for _, sec := range syl.Sections {
		add("course section "+sec.ID, sec.Title, sec.Intro)
	}
	for _, sc := range all {
		if l := sc.Course; l != nil {
			add("course lesson "+sc.ID, append(append(append([]string{l.Outside, l.Predict, l.Edit}, l.Objectives...), l.Questions...), l.Instructor...)...)
		}
	}
	for _, g := range syl.Glossary {
		if strings.EqualFold(g.Term, "token") {
			t.Errorf("the glossary defines %q on its own: in the course a token is a fencing token", g.Term)
		}
		add("glossary "+g.Term, g.Text)
	}
	for _, sc := range all {
		add("scenario "+sc.ID, sc.Title, sc.Narrative.What, sc.Narrative.Why, sc.Narrative.Fix)
	}
	internal := regexp.MustCompile(`(?i)regression for|\b5 MB\b|stays under|issue \d+|\bharness\b`)
	lockValueAsToken := regexp.MustCompile(`(?i)SET key token|own token|compare the token|random token`)
	for _, x := range texts {
		if m := internal.FindString(x); m != "" {
			t.Errorf("%q: internal wording %q in student text", x, m)
		}
		if m := lockValueAsToken.FindString(x); m != "" {
			t.Errorf("%q: %q calls the lock value a token (a token is a fencing token)", x, m)
		}
	}
}
