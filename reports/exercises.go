package reports

// The apparatus around a lesson (issue 21, item 4): a predict-then-run
// exercise, an edit-the-scenario exercise whose answer is the fixed twin,
// notes for the instructor, and glossary terms linked from the lesson's
// text. Everything a student is told the answer is comes from data — the
// expected verdict from the scenario's own expectation, the answer to the
// edit from the differences between the scenario and its fixed twin — so an
// exercise cannot drift from the run it is about.

import (
	"fmt"
	"html"
	"html/template"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// predictExercise asks for the verdict before the run shows it.
type predictExercise struct {
	Question string
	Command  string
	Answer   []expectedVerdict
}

// expectedVerdict is one property and what the scenario asserts for it.
type expectedVerdict struct {
	Property string
	Expected checker.Status
}

// editExercise asks the student to turn the failing scenario into its fix;
// the answer is the catalogue's fixed twin, given as a complete change to
// the failing scenario's file: every setup field the twin changes and the
// expect: block it claims (issue 34, item 7), so that applying the answer
// to a copy makes `locklab run` match, not print a MISMATCH.
type editExercise struct {
	Start  string // the failing scenario's id
	Answer string // the fixed twin's id
	Hint   string
	// Goal is what the fixed scenario's run reports, in words: "no
	// violation" only when the twin claims every property holds; a fenced
	// fix says that mutual exclusion is still lost and the resource safe.
	Goal string
	// Fenced says the fix keeps the resource safe while mutual exclusion
	// is still lost, so the page teaches it as what it is; Guard says
	// how: the storage's fencing check, or the late holder itself.
	Fenced bool
	Guard  string
	// Changes are what the twin changes, field by field, as the page
	// prints them; steps are the same changes as data (the test that
	// applies and runs every answer, exercises_apply_test.go, uses them).
	Changes []string
	steps   []editStep
	// SameFaults says the twin keeps the failure's faults, so the task
	// can say "change the lock or its setup, not the faults".
	SameFaults bool
}

// editStep is one change of the answer: the value at path (map keys and
// list indices, from the file's top) becomes value, or is removed.
type editStep struct {
	path   []any
	old    any // the failure's value; nil when the step adds the field
	value  any
	remove bool
}

// newPredict derives the predict-then-run exercise of a lesson from its
// first scenario's expectation. question overrides the default wording.
func newPredict(first *scenarios.Scenario, question string) predictExercise {
	if question == "" {
		question = "Before you run it, read its story and its parameters. Which of mutual exclusion, resource safety and liveness will hold, and which will be violated?"
	}
	p := predictExercise{Question: question, Command: "locklab run " + first.ID}
	for _, e := range []expectedVerdict{
		{"mutual exclusion", first.Expect.MutualExclusion},
		{"resource safety", first.Expect.Resource},
		{"liveness", first.Expect.Liveness},
	} {
		if e.Expected != "" {
			p.Answer = append(p.Answer, e)
		}
	}
	return p
}

// newEdit derives the edit exercise from the lesson's first scenario and
// its fixed twins (nil when the lesson has none: a lesson whose first run
// already passes has nothing to fix). Of several fixes the answer is the
// one that leaves the fewest properties violated, in lesson order: the
// PgBouncer lesson's answer is the pooler setting that restores mutual
// exclusion, not the reset that still loses it.
func newEdit(first *scenarios.Scenario, twins []*scenarios.Scenario, hint string) *editExercise {
	var twin *scenarios.Scenario
	for k, tw := range twins {
		if _, class := roleOf(tw, first, k+1); class != "fixed" {
			continue
		}
		if twin == nil || len(violations(tw)) < len(violations(twin)) {
			twin = tw
		}
	}
	if twin == nil {
		return nil
	}
	steps := scenarioChanges(first, twin)
	e := &editExercise{Start: first.ID, Answer: twin.ID, Hint: hint, SameFaults: true, steps: steps}
	for _, st := range steps {
		e.Changes = append(e.Changes, st.String())
		if len(st.path) > 0 && st.path[0] == "faults" {
			e.SameFaults = false
		}
	}
	e.Goal, e.Fenced = editGoal(twin.Expect)
	if e.Fenced {
		e.Guard = "and the fix keeps the late holder's writes off the resource (it checks its lease before writing, or it no longer deletes the new holder's key)"
		if f := twin.Resource.TokenCheck; f != "" && f != "none" {
			e.Guard = "and the storage refuses the late holder's writes, whose fencing token is older than one it has seen"
		}
	}
	return e
}

// editGoal says in words what the fixed twin claims, property by property.
func editGoal(x scenarios.Expect) (string, bool) {
	held, lost := []string{}, []string{}
	for _, p := range []struct {
		name string
		s    checker.Status
	}{{"mutual exclusion", x.MutualExclusion}, {"resource safety", x.Resource}, {"liveness", x.Liveness}} {
		switch p.s {
		case checker.OK:
			held = append(held, p.name)
		case checker.Violated:
			lost = append(lost, p.name)
		}
	}
	fenced := x.MutualExclusion == checker.Violated && x.Resource == checker.OK
	switch {
	case len(lost) == 0:
		return "no violation", false
	case fenced:
		return "the resource safe while mutual exclusion is still violated", true
	default:
		return strings.Join(held, " and ") + " holding, " + strings.Join(lost, " and ") + " still violated", false
	}
}

// ignoredInDiff are the fields that name or explain a scenario rather than
// set up or judge its run. The expectation, the seed and the bounds
// (at_most) are part of the answer: a copy that keeps the failure's
// expect: block cannot match the fix's run.
var ignoredInDiff = []string{"id", "title", "narrative", "course", "twin", "compare", "counterexample", "made_for"}

// scenarioChanges lists, field by field, how twin differs from first. The
// list is complete, however long: it is the answer a student applies.
func scenarioChanges(first, twin *scenarios.Scenario) []editStep {
	a, errA := scenarioTree(first)
	b, errB := scenarioTree(twin)
	if errA != nil || errB != nil {
		return nil
	}
	var out []editStep
	diffTree(nil, a, b, &out)
	return out
}

// scenarioTree is the scenario as generic YAML data, without the fields
// that do not change the run.
func scenarioTree(sc *scenarios.Scenario) (map[string]any, error) {
	data, err := yaml.Marshal(sc)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	for _, k := range ignoredInDiff {
		delete(m, k)
	}
	return m, nil
}

// diffTree appends one step per leaf where a and b differ, at its path in
// the scenario file, in a fixed order.
func diffTree(path []any, a, b any, out *[]editStep) {
	at := func(k any) []any { return append(slices.Clone(path), k) }
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			keys := map[string]bool{}
			for k := range av {
				keys[k] = true
			}
			for k := range bv {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			slices.Sort(sorted)
			for _, k := range sorted {
				if k == "note" {
					continue // a fault's note explains it; it changes nothing
				}
				diffTree(at(k), av[k], bv[k], out)
			}
			return
		}
	case []any:
		if bv, ok := b.([]any); ok {
			// Element by element; a longer list adds its tail (a token
			// store appended to the nodes), a shorter one removes it.
			for i := range max(len(av), len(bv)) {
				var ae, be any
				if i < len(av) {
					ae = av[i]
				}
				if i < len(bv) {
					be = bv[i]
				}
				diffTree(at(i), ae, be, out)
			}
			return
		}
	}
	if yamlText(a) != yamlText(b) {
		*out = append(*out, editStep{path: path, value: b, remove: b == nil, old: a})
	}
}

// String is the step as the page prints it: "faults[0].at: 1s → 2s".
func (st editStep) String() string {
	var p strings.Builder
	for _, k := range st.path {
		switch k := k.(type) {
		case int:
			fmt.Fprintf(&p, "[%d]", k)
		default:
			if p.Len() > 0 {
				p.WriteByte('.')
			}
			fmt.Fprint(&p, k)
		}
	}
	switch {
	case st.old == nil:
		return fmt.Sprintf("%s: add %s", p.String(), yamlText(st.value))
	case st.remove:
		return fmt.Sprintf("%s: remove (was %s)", p.String(), yamlText(st.old))
	default:
		return fmt.Sprintf("%s: %s → %s", p.String(), yamlText(st.old), yamlText(st.value))
	}
}

// yamlText renders a YAML value on one line, as a scenario file writes it.
func yamlText(v any) string {
	if v == nil {
		return ""
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSpace(string(data))
	switch v.(type) {
	case map[string]any, []any:
		// A list or map added or changed as a whole: flow style fits a
		// line.
		var n yaml.Node
		if yaml.Unmarshal(data, &n) == nil && len(n.Content) == 1 {
			setFlow(n.Content[0])
			if flow, err := yaml.Marshal(n.Content[0]); err == nil {
				s = strings.TrimSpace(string(flow))
			}
		}
	}
	return s
}

func setFlow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	for _, c := range n.Content {
		setFlow(c)
	}
}

// glossaryLinker links glossary terms from a lesson's text to the course's
// glossary page: each term once per page, at its first mention, so a
// student can look a word up where it first matters.
type glossaryLinker struct {
	re     *regexp.Regexp
	anchor map[string]string // lower-case term → anchor
	used   map[string]bool
}

// newGlossaryLinker matches the glossary's terms, longest first ("Fencing
// token" before "Token"), as whole words, case-insensitively.
func newGlossaryLinker(glossary []GlossaryEntry) *glossaryLinker {
	gl := &glossaryLinker{anchor: map[string]string{}, used: map[string]bool{}}
	var alts []string
	for _, e := range glossary {
		for _, form := range termForms(e.Term) {
			gl.anchor[strings.ToLower(form)] = termAnchor(e.Term)
			alts = append(alts, regexp.QuoteMeta(html.EscapeString(form)))
		}
	}
	if len(alts) == 0 {
		return gl
	}
	slices.SortStableFunc(alts, func(a, b string) int { return len(b) - len(a) })
	gl.re = regexp.MustCompile(`(?i)\b(` + strings.Join(alts, "|") + `)\b`)
	return gl
}

// termForms are the spellings of a glossary term that link to it: the term
// itself and, for a term written "A and B", each of A and B.
func termForms(term string) []string {
	forms := []string{term}
	if a, b, ok := strings.Cut(term, " and "); ok {
		forms = append(forms, a, b)
	}
	return forms
}

// termAnchor is the id of a term on the glossary page.
func termAnchor(term string) string {
	var b strings.Builder
	b.WriteString("term-")
	for _, r := range strings.ToLower(term) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// link escapes text and links the first mention on the page of each term.
func (gl *glossaryLinker) link(text string) template.HTML {
	escaped := html.EscapeString(text)
	if gl == nil || gl.re == nil {
		return template.HTML(escaped)
	}
	return template.HTML(gl.re.ReplaceAllStringFunc(escaped, func(m string) string {
		anchor := gl.anchor[strings.ToLower(html.UnescapeString(m))]
		if anchor == "" || gl.used[anchor] {
			return m
		}
		gl.used[anchor] = true
		return fmt.Sprintf(`<a class="term" href="%s#%s">%s</a>`, GlossaryFile, anchor, m)
	}))
}

// linkAll links a list of texts in order.
func (gl *glossaryLinker) linkAll(texts []string) []template.HTML {
	out := make([]template.HTML, len(texts))
	for i, t := range texts {
		out[i] = gl.link(t)
	}
	return out
}
