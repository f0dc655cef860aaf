package reports

import (
	"bytes"
	"embed"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/locklab/locklab/scenarios"
)

// The course is data, so a lecturer can change it without touching Go, and
// a scenario is one file: the course file (course/course.yaml) holds only
// the sections, their order and intros, and the glossary; each lesson's
// objectives, questions, sources and instructor notes are in the course:
// block of its scenario file (scenarios.LessonNotes).

//go:embed course/course.yaml
var courseFS embed.FS

// Syllabus is the course's outline.
type Syllabus struct {
	Title    string            `yaml:"title"`
	Intro    string            `yaml:"intro"`
	Sections []SyllabusSection `yaml:"sections"`
	Glossary []GlossaryEntry   `yaml:"glossary"`
}

// SyllabusSection is one section of the course: its lessons in teaching
// order, each named by the id of one of its scenarios (the lesson's
// other scenarios, its twins, join it: see Lessons).
type SyllabusSection struct {
	ID      string   `yaml:"id"`
	Title   string   `yaml:"title"`
	Intro   string   `yaml:"intro"`
	Lessons []string `yaml:"lessons"`
}

// GlossaryEntry is one term.
type GlossaryEntry struct {
	Term string `yaml:"term"`
	Text string `yaml:"text"`
}

// DefaultSyllabus returns the built-in course outline.
func DefaultSyllabus() (*Syllabus, error) {
	data, err := courseFS.ReadFile("course/course.yaml")
	if err != nil {
		return nil, err
	}
	return ParseSyllabus("course/course.yaml", data)
}

// ParseSyllabus reads a course outline, rejecting unknown fields and
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
		for j, id := range sec.Lessons {
			if id == "" {
				return nil, fmt.Errorf("%s: sections[%d].lessons[%d]: expected a scenario id", name, i, j)
			}
			if seen[id] {
				return nil, fmt.Errorf("%s: sections[%d].lessons[%d]: %q is already a lesson", name, i, j, id)
			}
			seen[id] = true
		}
	}
	return &s, nil
}

// notesOf returns the course: block of the lesson's scenario that carries
// one (nil when none does), and a problem when more than one does.
func notesOf(l Lesson) (*scenarios.LessonNotes, string) {
	var notes *scenarios.LessonNotes
	var from string
	for _, sc := range l.Scenarios() {
		if sc.Course == nil {
			continue
		}
		if notes != nil {
			return notes, fmt.Sprintf("lesson %s: both %s and %s have a course: block; one scenario of a lesson carries it", l.First.ID, from, sc.ID)
		}
		notes, from = sc.Course, sc.ID
	}
	return notes, ""
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
	Meta scenarios.LessonNotes
	N    int // number in the whole course, from 1
}

// notListed is why the index names a lesson outside the course whose
// notes give no reason.
const notListed = "in no section of the course"

// plan orders the lessons of all by the syllabus. A lesson no section
// lists is outside the course: the index names it (with the reason its
// notes give) and it has no page. problems are what a consistent course
// does not have: a listed id the catalogue lacks, a listed lesson without
// notes or whose notes say it is outside, notes on two scenarios of one
// lesson.
func (s *Syllabus) plan(all []*scenarios.Scenario) (secs []courseSection, outside []outsideEntry, problems []string) {
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
		for _, id := range sec.Lessons {
			i, ok := byID[id]
			if !ok {
				problems = append(problems, fmt.Sprintf("section %s lists %q, which is no scenario of the catalogue", sec.ID, id))
				continue
			}
			if used[i] {
				problems = append(problems, fmt.Sprintf("section %s lists %q, whose lesson is already listed", sec.ID, id))
				continue
			}
			used[i] = true
			notes, problem := notesOf(lessons[i])
			if problem != "" {
				problems = append(problems, problem)
			}
			if notes == nil {
				problems = append(problems, fmt.Sprintf("lesson %s is listed in section %s but no scenario of it has a course: block", lessons[i].First.ID, sec.ID))
				notes = &scenarios.LessonNotes{}
			}
			if notes.Outside != "" {
				problems = append(problems, fmt.Sprintf("lesson %s is listed in section %s but its course.outside says it is not: %q", lessons[i].First.ID, sec.ID, notes.Outside))
			}
			n++
			cs.Lessons = append(cs.Lessons, courseLesson{Lesson: lessons[i], Meta: *notes, N: n})
		}
		if len(cs.Lessons) > 0 {
			cs.N = len(secs) + 1
			secs = append(secs, cs)
		}
	}
	for i, l := range lessons {
		if used[i] {
			continue
		}
		notes, problem := notesOf(l)
		if problem != "" {
			problems = append(problems, problem)
		}
		why := notListed
		if notes != nil && notes.Outside != "" {
			why = notes.Outside
		}
		outside = append(outside, outsideEntry{IDs: l.IDs(), Title: l.First.Title, Why: why})
	}
	return secs, outside, problems
}

// LeftOut maps each scenario of the catalogue's lessons that the course
// has no page for to the reason the index gives.
func (s *Syllabus) LeftOut(all []*scenarios.Scenario) map[string]string {
	_, outside, _ := s.plan(all)
	out := map[string]string{}
	for _, o := range outside {
		for _, id := range o.IDs {
			out[id] = o.Why
		}
	}
	return out
}
