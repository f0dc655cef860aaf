package scenarios

import "slices"

// LessonNotes is what the course says around a scenario's run, kept in the
// scenario's own file (the course: block) so that a scenario and its lesson
// are one file. The course file (reports/course/course.yaml) only orders
// lessons into sections by id; a scenario it does not list is outside the
// course, whatever its notes say. Of a lesson's scenarios (the broken one
// and its twins, reports.Lessons) one carries the notes.
type LessonNotes struct {
	Objectives []string `yaml:"objectives,omitempty"`
	Questions  []string `yaml:"questions,omitempty"`
	// Answers answer the questions, in their order, for whoever teaches
	// the lesson (issue 34, item 7): shown folded with the instructor
	// notes, never on the handout.
	Answers []string `yaml:"answers,omitempty"`
	Try     []string `yaml:"try,omitempty"`
	// Sources are read beside the narrative's own sources.
	Sources []string `yaml:"sources,omitempty"`
	// Predict overrides the question of the predict-then-run exercise;
	// its answer always comes from the scenario's expectation.
	Predict string `yaml:"predict,omitempty"`
	// Edit is a hint for the edit-the-scenario exercise, whose answer is
	// the lesson's fixed twin.
	Edit string `yaml:"edit,omitempty"`
	// Instructor holds notes for whoever teaches the lesson: what to
	// point at, the usual misreading, how long it takes. Shown folded on
	// the lesson page, never on the handout.
	Instructor []string `yaml:"instructor,omitempty"`
	// Outside says why the course file leaves this lesson out (an
	// extension of another lesson, a short check): the course index names
	// it with this reason, for teachers who run it with locklab run.
	Outside string `yaml:"outside,omitempty"`
}

// clone returns a deep copy (nil for nil).
func (n *LessonNotes) clone() *LessonNotes {
	if n == nil {
		return nil
	}
	c := *n
	c.Objectives = slices.Clone(n.Objectives)
	c.Questions = slices.Clone(n.Questions)
	c.Answers = slices.Clone(n.Answers)
	c.Try = slices.Clone(n.Try)
	c.Sources = slices.Clone(n.Sources)
	c.Instructor = slices.Clone(n.Instructor)
	return &c
}
