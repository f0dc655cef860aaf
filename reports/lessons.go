package reports

import (
	"sort"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// A course is the catalogue taught in order: each classic failure beside its
// fixed twin, one page per lesson, and an index.

// Lesson is one page of the course: a scenario and the twins the catalogue
// has for it (its fixed counterparts; a failure may have several fixes).
type Lesson struct {
	// First is shown first: the scenario that fails (or the only one).
	First *scenarios.Scenario
	// Twins are its counterparts, by id; none when the catalogue has none.
	Twins []*scenarios.Scenario
	// MissingTwin names a twin the scenario refers to that the catalogue
	// does not have (yet).
	MissingTwin string
}

// File is the lesson's page name inside the course directory.
func (l Lesson) File() string { return safeFileName(l.First.ID) + ".html" }

// Scenarios lists the lesson's scenarios, first the failure.
func (l Lesson) Scenarios() []*scenarios.Scenario {
	return append([]*scenarios.Scenario{l.First}, l.Twins...)
}

// IDs lists the lesson's scenario ids, first the failure.
func (l Lesson) IDs() []string {
	var ids []string
	for _, s := range l.Scenarios() {
		ids = append(ids, s.ID)
	}
	return ids
}

// teachingOrder is the order of the course: the single-instance mistakes
// first (SETNX then EXPIRE, DEL against compare-and-delete, pauses and
// fencing), then Redlock, failover and ZooKeeper. Scenarios that match none
// of these come last, by id.
var teachingOrder = []string{
	"setnx-expire",
	"del-wrong-client",
	"gc-pause",
	"delayed-grant",
	"client-retry",
	"reentrant",
	"watchdog",
	"redlock-",
	"failover-",
	"fencing-token",
	"zk-",
}

func teachingRank(id string) int {
	for i, p := range teachingOrder {
		if strings.HasPrefix(id, p) {
			return i
		}
	}
	return len(teachingOrder)
}

// violations is the set of properties a scenario expects to be violated.
func violations(s *scenarios.Scenario) map[string]bool {
	v := map[string]bool{}
	if s.Expect.MutualExclusion == checker.Violated {
		v["mutual exclusion"] = true
	}
	if s.Expect.Resource == checker.Violated {
		v["resource"] = true
	}
	if s.Expect.Liveness == checker.Violated {
		v["liveness"] = true
	}
	return v
}

func expectsViolation(s *scenarios.Scenario) bool { return len(violations(s)) > 0 }

// Lessons groups every scenario with its twins — the scenarios it names as
// twin or that name it, transitively — and orders the lessons for teaching.
// Each scenario is in exactly one lesson. Within a lesson the scenario with
// the most expected violations comes first.
func Lessons(all []*scenarios.Scenario) []Lesson {
	sorted := append([]*scenarios.Scenario(nil), all...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	byID := map[string]int{}
	for i, s := range sorted {
		if _, dup := byID[s.ID]; !dup {
			byID[s.ID] = i
		}
	}
	// Union-find over the twin relation.
	parent := make([]int, len(sorted))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for i, s := range sorted {
		if j, ok := byID[s.Twin]; ok && s.Twin != "" {
			a, b := find(i), find(j)
			parent[max(a, b)] = min(a, b)
		}
	}
	groups := map[int][]*scenarios.Scenario{}
	var roots []int
	for i, s := range sorted {
		r := find(i)
		if _, ok := groups[r]; !ok {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], s)
	}
	var out []Lesson
	for _, r := range roots {
		g := groups[r]
		sort.SliceStable(g, func(i, j int) bool { return firstOfPair(g[i], g[j]) })
		l := Lesson{First: g[0], Twins: g[1:]}
		if len(g) == 1 && g[0].Twin != "" {
			l.MissingTwin = g[0].Twin
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := lessonRank(out[i]), lessonRank(out[j])
		if ri != rj {
			return ri < rj
		}
		return out[i].First.ID < out[j].First.ID
	})
	return out
}

// firstOfPair reports whether a should be shown before b: the one expecting
// more violations first, else the one whose id is a prefix of the other's,
// else by id.
func firstOfPair(a, b *scenarios.Scenario) bool {
	va, vb := len(violations(a)), len(violations(b))
	if va != vb {
		return va > vb
	}
	if strings.HasPrefix(b.ID, a.ID) != strings.HasPrefix(a.ID, b.ID) {
		return strings.HasPrefix(b.ID, a.ID)
	}
	return a.ID < b.ID
}

func lessonRank(l Lesson) int {
	r := teachingRank(l.First.ID)
	for _, t := range l.Twins {
		r = min(r, teachingRank(t.ID))
	}
	return r
}

// safeFileName keeps letters, digits, '-', '_' and '.' of an id.
func safeFileName(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if s == "" || s == "index" {
		s = "scenario-" + s
	}
	return s
}

// CourseOptions tunes WriteCourse.
type CourseOptions struct {
	// Progress, if set, is called after each lesson (err is the reason the
	// lesson could not be written, or nil).
	Progress func(done, total int, l Lesson, file string, err error)
	// Run runs a scenario; nil means runner.RunCompared with the
	// scenario's own seed and the trace kept.
	Run func(sc *scenarios.Scenario) (*runner.Result, []runner.Comparison, error)
	// Syllabus is the teaching material; nil means DefaultSyllabus.
	Syllabus *Syllabus
}

// HandoutFile is the lesson's printable one-page handout.
func (l Lesson) HandoutFile() string { return safeFileName(l.First.ID) + "-handout.html" }
