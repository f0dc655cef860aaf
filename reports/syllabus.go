package reports

import (
	"bytes"
	"embed"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/locklab/locklab/scenarios"
)

// The course's teaching material — sections in teaching order, each
// lesson's objectives, questions to discuss and extra sources, and the
// glossary — is data (course/course.yaml), so a lecturer can change the
// course without touching Go.

//go:embed course/course.yaml
var courseFS embed.FS

// Syllabus is the course's teaching material.
type Syllabus struct {
	Title    string            `yaml:"title"`
	Intro    string            `yaml:"intro"`
	Sections []SyllabusSection `yaml:"sections"`
	Glossary []GlossaryEntry   `yaml:"glossary"`
}

// SyllabusSection is one section of the course.
type SyllabusSection struct {
	ID      string           `yaml:"id"`
	Title   string           `yaml:"title"`
	Intro   string           `yaml:"intro"`
	Lessons []SyllabusLesson `yaml:"lessons"`
}

// SyllabusLesson is what the course says around one lesson; Scenario is the
// id of the lesson's first scenario (its twins join it).
type SyllabusLesson struct {
	Scenario   string   `yaml:"scenario"`
	Objectives []string `yaml:"objectives"`
	Questions  []string `yaml:"questions"`
	Try        []string `yaml:"try"`
	Sources    []string `yaml:"sources"`
	// Predict overrides the question of the predict-then-run exercise;
	// its answer always comes from the scenario's expectation.
	Predict string `yaml:"predict"`
	// Edit is a hint for the edit-the-scenario exercise, whose answer is
	// the lesson's fixed twin.
	Edit string `yaml:"edit"`
	// Instructor holds notes for whoever teaches the lesson: what to
	// point at, the usual misreading, how long it takes. Shown folded on
	// the lesson page, never on the handout.
	Instructor []string `yaml:"instructor"`
	// Outside, when set, says why the built course leaves this lesson
	// out (the course must stay small enough to hand out, under 5 MB):
	// the lesson stays in the syllabus for teachers, who run it with
	// locklab run, but WriteCourse renders no page for it.
	Outside string `yaml:"outside"`
}

// GlossaryEntry is one term.
type GlossaryEntry struct {
	Term string `yaml:"term"`
	Text string `yaml:"text"`
}

// DefaultSyllabus returns the built-in course material.
func DefaultSyllabus() (*Syllabus, error) {
	data, err := courseFS.ReadFile("course/course.yaml")
	if err != nil {
		return nil, err
	}
	return ParseSyllabus("course/course.yaml", data)
}

// ParseSyllabus reads course material, rejecting unknown fields and
// lessons named twice.
func ParseSyllabus(name string, data []byte) (*Syllabus, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Syllabus
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	seen := map[string]bool{}
	for i, sec := range s.Sections {
		if sec.Title == "" {
			return nil, fmt.Errorf("%s: sections[%d].title: expected a title", name, i)
		}
		for j, l := range sec.Lessons {
			if l.Scenario == "" {
				return nil, fmt.Errorf("%s: sections[%d].lessons[%d].scenario: expected a scenario id", name, i, j)
			}
			if seen[l.Scenario] {
				return nil, fmt.Errorf("%s: sections[%d].lessons[%d].scenario: %q is already a lesson", name, i, j, l.Scenario)
			}
			seen[l.Scenario] = true
		}
	}
	return &s, nil
}

// LeftOut maps the scenario of each lesson the built course leaves out
// (SyllabusLesson.Outside) to the reason.
func (s *Syllabus) LeftOut() map[string]string {
	out := map[string]string{}
	for _, sec := range s.Sections {
		for _, l := range sec.Lessons {
			if l.Outside != "" {
				out[l.Scenario] = l.Outside
			}
		}
	}
	return out
}

// leftOut resolves the lessons the course leaves out against the
// catalogue, in syllabus order, for the index to list.
func (s *Syllabus) leftOut(all []*scenarios.Scenario) []outsideEntry {
	lessons := Lessons(all)
	var out []outsideEntry
	for _, sec := range s.Sections {
		for _, meta := range sec.Lessons {
			if meta.Outside == "" {
				continue
			}
			for _, l := range lessons {
				if slices.Contains(l.IDs(), meta.Scenario) {
					out = append(out, outsideEntry{IDs: l.IDs(), Title: l.First.Title, Why: meta.Outside})
					break
				}
			}
		}
	}
	return out
}

// outsideEntry is a lesson the index names without a page.
type outsideEntry struct {
	IDs   []string
	Title string
	Why   string
}

// courseSection is a section with its lessons resolved against the
// catalogue.
type courseSection struct {
	SyllabusSection
	N       int
	Lessons []courseLesson
}

type courseLesson struct {
	Lesson
	Meta SyllabusLesson
	N    int // number in the whole course, from 1
}

// plan orders the lessons of all by the syllabus. Lessons the syllabus does
// not name go to a last section, "More scenarios", in the order Lessons
// gives; lessons it marks Outside are left out; syllabus entries that
// match no lesson are returned as unknown.
func (s *Syllabus) plan(all []*scenarios.Scenario) (secs []courseSection, unknown []string) {
	lessons := Lessons(all)
	byID := map[string]int{}
	for i, l := range lessons {
		for _, id := range l.IDs() {
			byID[id] = i
		}
	}
	used := map[int]bool{}
	n := 0
	for _, sec := range s.Sections {
		cs := courseSection{SyllabusSection: sec}
		for _, meta := range sec.Lessons {
			i, ok := byID[meta.Scenario]
			if !ok || used[i] {
				if !ok {
					unknown = append(unknown, meta.Scenario)
				}
				continue
			}
			used[i] = true
			if meta.Outside != "" {
				continue
			}
			n++
			cs.Lessons = append(cs.Lessons, courseLesson{Lesson: lessons[i], Meta: meta, N: n})
		}
		if len(cs.Lessons) > 0 {
			cs.N = len(secs) + 1
			secs = append(secs, cs)
		}
	}
	more := courseSection{SyllabusSection: SyllabusSection{ID: "more", Title: "More scenarios", Intro: "Scenarios the course does not place in a section yet."}}
	for i, l := range lessons {
		if !used[i] {
			n++
			more.Lessons = append(more.Lessons, courseLesson{Lesson: l, N: n})
		}
	}
	if len(more.Lessons) > 0 {
		more.N = len(secs) + 1
		secs = append(secs, more)
	}
	return secs, unknown
}
