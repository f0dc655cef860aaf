package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/checker"

	"go.yaml.in/yaml/v3"
)

// A counterexample file is a scenario that carries its own proof of
// origin, so that it cannot lie: its first block says which format wrote
// it, the seed and the expectation it was found with, the digest of the
// trace that run produced, and a digest of the scenario itself. Replaying
// it checks all of them and says exactly what differs, so a file cut short
// (its expect: gone), edited by hand or replayed by a locklab that runs it
// differently is an error, not a quiet pass.

// CounterexampleFormat is the version of the counterexample block this
// locklab writes and reads.
const CounterexampleFormat = 1

// Provenance is the counterexample block, written first in the file.
type Provenance struct {
	Format int `yaml:"format" json:"format" range:"1..1000"`
	// Seed and Expect repeat the scenario's, so a truncated or edited file
	// disagrees with itself.
	Seed   uint64 `yaml:"seed" json:"seed"`
	Expect Expect `yaml:"expect" json:"expect"`
	// Property is the violated property the file reproduces.
	Property string `yaml:"property" json:"property"`
	// TraceSHA256 is the digest of the run's full event trace.
	TraceSHA256 string `yaml:"trace_sha256" json:"trace_sha256"`
	// ScenarioSHA256 is the digest of the rest of the file, as locklab
	// writes it (Marshal without this block).
	ScenarioSHA256 string `yaml:"scenario_sha256" json:"scenario_sha256"`
}

// digest is the SHA-256 of the scenario's canonical YAML without its
// counterexample block.
func (s *Scenario) digest() (string, error) {
	c := s.Clone()
	c.Counterexample = nil
	b, err := c.Marshal()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Seal marks s as the counterexample that a traced run of s with s.Seed
// produced, violating property; traceSHA256 is that run's trace digest
// (runner.Result.TraceSHA256, "" for a run that was not traced).
func (s *Scenario) Seal(traceSHA256, property string) error {
	if traceSHA256 == "" {
		return fmt.Errorf("counterexample: the run was not traced, so there is no digest to seal")
	}
	s.Counterexample = nil
	d, err := s.digest()
	if err != nil {
		return err
	}
	s.Counterexample = &Provenance{Format: CounterexampleFormat, Seed: s.Seed, Expect: s.Expect, Property: property, TraceSHA256: traceSHA256, ScenarioSHA256: d}
	return nil
}

// CheckFile checks a parsed counterexample against itself before it runs:
// the format is one this locklab reads, and the seed, expectation and the
// scenario's digest agree with the block. It returns nil for a scenario
// without a counterexample block. Problems are *FieldErrors naming the
// field that differs.
func (s *Scenario) CheckFile() error {
	p := s.Counterexample
	if p == nil {
		return nil
	}
	var errs Errors
	bad := func(field, format string, args ...any) { errs = append(errs, s.fieldErr(field, format, args...)) }
	if p.Format != CounterexampleFormat {
		bad("counterexample.format", "expected format %d (this locklab's), found %d; replay it with the locklab that wrote it", CounterexampleFormat, p.Format)
		return errs.orNil()
	}
	if p.TraceSHA256 == "" || len(p.TraceSHA256) != 64 {
		bad("counterexample.trace_sha256", "expected the 64-digit trace digest the file was written with, found %q", Printable(p.TraceSHA256, 70))
	}
	if !hasKey(s.root, "seed") {
		bad("seed", "missing; the counterexample was found with seed %d (the file was cut short?)", p.Seed)
	} else if p.Seed != s.Seed {
		bad("seed", "the counterexample was found with seed %d, but the file's seed is %d (edited?)", p.Seed, s.Seed)
	}
	// The property is checked too: an edited one (liveness where the
	// run violates mutual exclusion) would otherwise replay as a pass,
	// since the expectation alone decides the exit status.
	if !slices.Contains(counterexampleProperties, p.Property) {
		msg := fmt.Sprintf("expected one of %s, found %q", strings.Join(counterexampleProperties, ", "), Printable(p.Property, 40))
		if d := DidYouMean(p.Property, counterexampleProperties); d != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", d)
		}
		bad("counterexample.property", "%s", msg)
	} else if want := expectedOf(p.Expect, p.Property); want != checker.Violated {
		bad("counterexample.property", "the counterexample reproduces a violation of %s, but its expect for %s is %s (edited?)", p.Property, p.Property, statusText(want))
	}
	if p.Expect != s.Expect {
		bad("expect", "the counterexample expects %s, but the file's expect is %s (cut short or edited?)", expectText(p.Expect), expectText(s.Expect))
	}
	// A file sealed by a locklab that wrote params.fencing and
	// resource.fencing (retired.go) has the digest of those spellings.
	old, retired := s.retiredDigest()
	if d, err := s.digest(); err == nil && d != p.ScenarioSHA256 && !(retired && old == p.ScenarioSHA256) && len(errs) == 0 {
		bad("counterexample.scenario_sha256", "the scenario's digest is %s, the file says %s: the file was cut short or edited after locklab wrote it", d[:16]+"…", Printable(p.ScenarioSHA256, 16)+"…")
	}
	return errs.orNil()
}

// CheckReplay compares a run of a counterexample with the block: a run
// with the file's seed must give the recorded trace digest.
func (s *Scenario) CheckReplay(seed uint64, report *checker.Report, traceSHA256 string) error {
	p := s.Counterexample
	if p == nil || seed != p.Seed {
		return nil
	}
	if report != nil && !Violates(report.Verdict, p.Property) {
		return s.fieldErr("counterexample.property", "the replay does not violate %s, which the file says it reproduces", Printable(p.Property, 40))
	}
	if traceSHA256 != p.TraceSHA256 {
		return s.fieldErr("counterexample.trace_sha256", "the replay's trace digest is %s, the file says %s: this run is not the one the file recorded", traceSHA256, p.TraceSHA256)
	}
	return nil
}

// ViolatedProperty is the first violated property in the order mutual
// exclusion, resource, liveness, or "".
func ViolatedProperty(v checker.Verdict) string {
	switch {
	case v.MutualExclusion == checker.Violated:
		return "mutual_exclusion"
	case v.Resource == checker.Violated:
		return "resource"
	case v.Liveness == checker.Violated:
		return "liveness"
	}
	return ""
}

// Violates reports whether v violates prop ("mutual_exclusion",
// "resource" or "liveness").
func Violates(v checker.Verdict, prop string) bool {
	switch prop {
	case "mutual_exclusion":
		return v.MutualExclusion == checker.Violated
	case "resource":
		return v.Resource == checker.Violated
	case "liveness":
		return v.Liveness == checker.Violated
	}
	return false
}

// counterexampleProperties are the properties a counterexample can
// reproduce, in ViolatedProperty's order.
var counterexampleProperties = []string{"mutual_exclusion", "resource", "liveness"}

// expectedOf is e's expectation for prop ("" for an unknown prop or none).
func expectedOf(e Expect, prop string) checker.Status {
	switch prop {
	case "mutual_exclusion":
		return e.MutualExclusion
	case "resource":
		return e.Resource
	case "liveness":
		return e.Liveness
	}
	return ""
}

func statusText(st checker.Status) string {
	if st == "" {
		return "nothing"
	}
	return string(st)
}

func expectText(e Expect) string {
	var parts []string
	for _, p := range []struct {
		name string
		v    string
	}{{"mutual_exclusion", string(e.MutualExclusion)}, {"resource", string(e.Resource)}, {"liveness", string(e.Liveness)}} {
		if p.v != "" {
			parts = append(parts, p.name+": "+p.v)
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// hasKey reports whether the document's top mapping has key (true when
// there is no document, for scenarios built in Go).
func hasKey(root *yaml.Node, key string) bool {
	if root == nil || len(root.Content) == 0 {
		return true
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}
