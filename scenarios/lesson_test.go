package scenarios

import (
	"strings"
	"testing"
)

// A scenario's course: block is checked like every other field: an
// unknown key is refused with its place and the keys it could be.
func TestCourseBlockUnknownKey(t *testing.T) {
	s, err := Get("gc-pause-beyond-ttl")
	if err != nil {
		t.Fatal(err)
	}
	if s.Course == nil || len(s.Course.Objectives) != 3 || len(s.Course.Instructor) != 2 {
		t.Fatalf("gc-pause-beyond-ttl's lesson notes: %+v", s.Course)
	}
	if c := s.Clone(); c.Course == s.Course || c.Course.Objectives[0] != s.Course.Objectives[0] {
		t.Error("Clone shares or loses the lesson notes")
	}
	in := "id: x\ntitle: X\nalgorithm: set-nx-px-lua\nttl: 10s\nnodes: [A]\nclients: {count: 1}\n" +
		"course:\n  objectives: [o]\n  questoins: [q]\n"
	_, err = Parse("x.yaml", []byte(in))
	if err == nil {
		t.Fatal("an unknown key in course: was accepted")
	}
	for _, want := range []string{"x.yaml:9:3", "course.questoins", "unknown field", "questions"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
