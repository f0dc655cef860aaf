package runner

import (
	"os"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// FuzzCounterexample fuzzes the counterexample format (issue 25): a file
// locklab wrote, then bytes changed anywhere in it. Whatever the block
// says, parsing and CheckFile answer without panicking, every refusal is
// one line naming the file, and a file that passes CheckFile with a
// changed property, seed or expectation still disagrees with itself
// nowhere: CheckFile's agreement is re-checked here field by field.
// Seeded with a sealed counterexample and the hand edits of issue 25.
func FuzzCounterexample(f *testing.F) {
	sealed := sealedCounterexample(f)
	f.Add(sealed)
	for _, edit := range []struct{ from, to string }{
		{"property: mutual_exclusion", "property: liveness"},
		{"property: mutual_exclusion", "property: mutual_exclusio"},
		{"property: mutual_exclusion", "property: \"\""},
		{"format: 1", "format: 2"},
		{"format: 1", "format: 0"},
		{"trace_sha256: ", "trace_sha256: 0"},
		{"mutual_exclusion: violated", "mutual_exclusion: ok"},
	} {
		f.Add([]byte(strings.Replace(string(sealed), edit.from, edit.to, 1)))
	}
	f.Add(sealed[:len(sealed)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenarios.ParseWith("cx.yaml", data, fuzzLimits)
		if err != nil {
			oneLineEach(t, "cx.yaml", err)
			return
		}
		err = s.CheckFile()
		if err != nil {
			oneLineEach(t, "cx.yaml", err)
			return
		}
		p := s.Counterexample
		if p == nil {
			return
		}
		// Accepted: the block agrees with the file on every field.
		if p.Seed != s.Seed || p.Expect != s.Expect || !scenarios.Violates(checker.Verdict(p.Expect), p.Property) || len(p.TraceSHA256) != 64 {
			t.Fatalf("CheckFile accepted a block that disagrees with its file: %+v seed %d expect %+v", p, s.Seed, s.Expect)
		}
	})
}

// sealedCounterexample is a counterexample as explore writes it: a run of
// a catalogue scenario that violates mutual exclusion, sealed.
func sealedCounterexample(f *testing.F) []byte {
	f.Helper()
	b, err := os.ReadFile("../scenarios/catalog/gc-pause-beyond-ttl.yaml")
	if err != nil {
		f.Fatal(err)
	}
	s, err := scenarios.Parse("gc-pause-beyond-ttl.yaml", b)
	if err != nil {
		f.Fatal(err)
	}
	res, err := Run(s, s.Seed, Options{KeepTrace: true})
	if err != nil {
		f.Fatal(err)
	}
	prop := scenarios.ViolatedProperty(res.Report.Verdict)
	if prop == "" {
		f.Fatal("gc-pause-beyond-ttl no longer violates anything; pick another seed scenario")
	}
	s.Expect = scenarios.Expect{}
	switch prop {
	case "mutual_exclusion":
		s.Expect.MutualExclusion = "violated"
	case "resource":
		s.Expect.Resource = "violated"
	case "liveness":
		s.Expect.Liveness = "violated"
	}
	if err := s.Seal(res.TraceSHA256, prop); err != nil {
		f.Fatal(err)
	}
	out, err := s.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	return out
}

func oneLineEach(t *testing.T, file string, err error) {
	t.Helper()
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, file) {
			t.Fatalf("error line does not name the file: %q", line)
		}
	}
}
