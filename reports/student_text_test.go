package reports

import (
	"regexp"
	"strings"
	"testing"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
)

// TestStudentTextNamesNoIdentifiers (issue 34, item 7): what a student
// reads is about locks, not about locklab's code. The forbidden names are
// derived from the registries — every algorithm id and every scenario id
// of the catalogue with a hyphen in it (the single words, "redlock", are
// the English names too) — and the checker's own words. A name may appear
// as a command to run ("locklab run gc-pause-beyond-ttl") or in a
// repository's path (swarthy/redis-semaphore), never as prose.
// The course's intros, glossary, every listed lesson's objectives,
// questions and exercise texts, and the stories (narratives) of the
// lessons' scenarios are checked for all of them: a story names another
// scenario as the command that runs it ("the failure (locklab run
// del-wrong-client)").
func TestStudentTextNamesNoIdentifiers(t *testing.T) {
	syl, err := DefaultSyllabus()
	if err != nil {
		t.Fatal(err)
	}
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	algos, ids := map[string]bool{}, map[string]bool{}
	for _, n := range algorithms.Names() {
		algos[n] = true
	}
	for _, sc := range all {
		ids[sc.ID] = true
	}
	if !algos["set-nx-px-lua"] || !ids["gc-pause-beyond-ttl"] {
		t.Fatal("the registries lack the names this test was written against")
	}
	for _, text := range []string{"Take the lock with set-nx-px-lua.", "as in gc-pause-beyond-ttl", "porcupine says Illegal"} {
		if len(forbiddenIn(text, algos, ids)) == 0 {
			t.Errorf("%q passes the check", text)
		}
	}
	if got := forbiddenIn("run locklab run gc-pause-beyond-ttl and compare-and-delete", algos, ids); len(got) != 0 {
		t.Errorf("a command to run, or a plain English compound, is refused: %q", got)
	}
	check := func(where, text string, names map[string]bool) {
		for _, bad := range forbiddenIn(text, algos, names) {
			t.Errorf("%s: %q names %q in student text: %q", where, bad, bad, text)
		}
	}
	check("course intro", syl.Intro, ids)
	for _, sec := range syl.Sections {
		check("section "+sec.ID, sec.Title+" "+sec.Intro, ids)
	}
	for _, g := range syl.Glossary {
		check("glossary "+g.Term, g.Text, ids)
	}
	secs, _, _ := syl.plan(all)
	for _, sec := range secs {
		for _, cl := range sec.Lessons {
			m := cl.Meta
			for _, x := range append(append(append([]string{m.Predict, m.Edit}, m.Objectives...), m.Questions...), cl.First.Title) {
				check("lesson "+cl.First.ID, x, ids)
			}
			for _, sc := range cl.Scenarios() {
				for _, x := range []string{sc.Title, sc.Narrative.What, sc.Narrative.Why, sc.Narrative.Fix} {
					check("story of "+sc.ID, x, ids)
				}
			}
		}
	}
}

var (
	hyphenated   = regexp.MustCompile(`(locklab run |/)?\b[a-z0-9]+(?:-[a-z0-9]+)+\b`)
	checkerWords = regexp.MustCompile(`(?i)\bporcupine\b|\bIllegal\b|\btrace hash|\bdigest\b|\b0x[0-9a-f]{8,}`)
)

// forbiddenIn lists the algorithm ids, scenario ids and checker words text
// uses outside a "locklab run" command.
func forbiddenIn(text string, algos, ids map[string]bool) []string {
	var out []string
	for _, m := range hyphenated.FindAllStringSubmatch(text, -1) {
		if m[1] != "" {
			continue
		}
		name := strings.TrimPrefix(m[0], m[1])
		if algos[name] || ids[name] {
			out = append(out, name)
		}
	}
	out = append(out, checkerWords.FindAllString(text, -1)...)
	return out
}
