package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/reports"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

// courseCLI runs 'locklab course' in process, t hosting the bubbles of
// the lessons on the real go-zookeeper client.
func courseCLI(t *testing.T, args ...string) (int, string, string) {
	bubblehost.Bind(t)
	var out, errb bytes.Buffer
	code := run(append([]string{"course"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCourseWritesEveryLessonAndAnIndex(t *testing.T) {
	t.Setenv(reports.EChartsEnv, "off")
	dir := filepath.Join(t.TempDir(), "course")
	code, stdout, stderr := courseCLI(t, "--out", dir)
	if code == 2 || strings.Contains(stderr, "FAILED") {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	syl, err := reports.DefaultSyllabus()
	if err != nil {
		t.Fatal(err)
	}
	// Lessons no section of the course lists have no page; the index
	// names each of their runs.
	leftOut := syl.LeftOut(all)
	var lessons []reports.Lesson
	for _, l := range reports.Lessons(all) {
		out := false
		for _, id := range l.IDs() {
			out = out || leftOut[id] != ""
		}
		if !out {
			lessons = append(lessons, l)
		}
	}

	// One progress line per lesson on stderr, the index named last on stdout.
	if n := strings.Count(stderr, "course: ["); n != len(lessons) {
		t.Errorf("%d progress lines for %d lessons:\n%s", n, len(lessons), stderr)
	}
	abs, _ := filepath.Abs(filepath.Join(dir, "index.html"))
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if last := lines[len(lines)-1]; last != "Course index: "+abs {
		t.Errorf("last line %q, want it to name %s", last, abs)
	}

	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, l := range lessons {
		if !bytes.Contains(index, []byte(`href="`+l.File()+`"`)) {
			t.Errorf("index does not link %s", l.File())
		}
		page, err := os.ReadFile(filepath.Join(dir, l.File()))
		if err != nil {
			t.Errorf("lesson page: %v", err)
			continue
		}
		for _, id := range l.IDs() {
			covered[id] = true
			if !bytes.Contains(page, []byte(`data-scenario="`+id+`"`)) {
				t.Errorf("%s does not hold the run of %s", l.File(), id)
			}
		}
		// Every scenario of a lesson is the twin of another one of it.
		ids := map[string]bool{}
		for _, id := range l.IDs() {
			ids[id] = true
		}
		for _, s := range l.Scenarios() {
			named := ids[s.Twin]
			for _, o := range l.Scenarios() {
				named = named || o.Twin == s.ID
			}
			if len(ids) > 1 && !named {
				t.Errorf("%s holds %s, which is no twin of the others", l.File(), s.ID)
			}
		}
	}
	for _, s := range all {
		if !covered[s.ID] && !bytes.Contains(index, []byte("<code>locklab run "+s.ID+"</code>")) {
			t.Errorf("scenario %s is in no lesson", s.ID)
		}
		if s.Twin != "" {
			for _, o := range all {
				if o.ID == s.Twin && !bytes.Contains(index, []byte(s.ID)) {
					t.Errorf("index does not mention %s (twin of %s)", s.ID, o.ID)
				}
			}
		}
	}
	// Sections in teaching order, a handout per lesson, a glossary, and
	// the shared assets once.
	last := -1
	for _, id := range []string{"section-one-node", "section-leases", "section-replication", "section-redlock", "section-zookeeper", "section-fencing"} {
		i := bytes.Index(index, []byte(`id="`+id+`"`))
		if i < 0 || i < last {
			t.Errorf("index: %s missing or out of teaching order", id)
		}
		last = i
	}
	for _, l := range lessons {
		if _, err := os.Stat(filepath.Join(dir, l.HandoutFile())); err != nil {
			t.Errorf("no handout for %s: %v", l.First.ID, err)
		}
	}
	for _, f := range []string{reports.GlossaryFile, "locklab.css", "locklab.js"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("course lacks %s", f)
		}
	}
	// The teaching sequence starts with SETNX then EXPIRE.
	if len(lessons) > 0 && !strings.HasPrefix(lessons[0].First.ID, "setnx-expire") {
		t.Errorf("first lesson is %s, want setnx-expire-*", lessons[0].First.ID)
	}
}

func TestCourseFlags(t *testing.T) {
	code, stdout, _ := courseCLI(t, "--help")
	if code != 0 || !strings.Contains(stdout, "Usage: locklab course --out DIR") {
		t.Errorf("--help: exit %d, stdout %q", code, stdout)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"help", "course"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "teaching order") {
		t.Errorf("help course: exit %d, %q", code, out.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "course needs --out DIR"},
		{[]string{"--out"}, "flag needs an argument"},
		{[]string{"--outdir", "x"}, "flag provided but not defined"},
		{[]string{"--out", t.TempDir(), "extra"}, `course takes no arguments, got "extra"`},
	} {
		code, _, stderr := courseCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
