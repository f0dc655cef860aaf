package scenarios

import (
	"strings"
	"testing"
)

// retiredFile is a scenario in the spellings before issue 33:
// params.fencing (the token source) and resource.fencing (the store's
// rule). Line and column numbers below refer to it.
const retiredFile = `id: old-words
algorithm: set-nx-px-lua
ttl: 10s
params: {fencing: incr, fence_start: "32"}
nodes: [A]
resource: {initial: 7, fencing: ">"}
clients: {count: 2, cycles: 1}
`

// The same scenario in the new words.
const renamedFile = `id: old-words
algorithm: set-nx-px-lua
ttl: 10s
params: {token_source: incr, fence_start: "32"}
nodes: [A]
resource: {initial: 7, token_check: ">"}
clients: {count: 2, cycles: 1}
`

func warningLines(s *Scenario) []string {
	var out []string
	for _, w := range s.Warnings {
		out = append(out, w.Error())
	}
	return out
}

// A file in the retired spellings parses to the same scenario as one in
// the new words, with a warning at each old key that names its new
// spelling; the new words give no warning (issue 33, Names).
func TestRetiredFencingSpellingsWarnAndReadAsNew(t *testing.T) {
	old, err := Parse("old.yaml", []byte(retiredFile))
	if err != nil {
		t.Fatal(err)
	}
	now, err := Parse("new.yaml", []byte(renamedFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Warnings) != 0 {
		t.Errorf("the new spellings warned:\n%s", strings.Join(warningLines(now), "\n"))
	}
	a, _ := old.Marshal()
	b, _ := now.Marshal()
	if string(a) != string(b) {
		t.Errorf("old spellings read as\n%s\nnew ones as\n%s", a, b)
	}
	if old.Params["token_source"] != "incr" || old.Resource.TokenCheck != ">" || old.Resource.RetiredFencing != "" {
		t.Errorf("read params %v, resource %+v", old.Params, old.Resource)
	}
	if _, ok := old.Params["fencing"]; ok {
		t.Errorf("params.fencing kept beside token_source: %v", old.Params)
	}
	want := []string{
		`old.yaml:4:19: params.fencing: renamed; read as token_source: "incr" (params.token_source is where the fencing tokens come from, resource.token_check how the store checks them)`,
		`old.yaml:6:33: resource.fencing: renamed; read as token_check: ">" (resource.token_check is how the store checks fencing tokens, params.token_source where they come from)`,
	}
	if got := warningLines(old); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Validating again renames nothing twice and keeps the warnings.
	if err := old.Validate(); err != nil || len(old.Warnings) != len(want) {
		t.Fatalf("second Validate: %v, warnings %q", err, warningLines(old))
	}
	// The run is the same run: runner/retired_test.go.
}

// A file that gives a key in both spellings is refused, naming both, at
// the old key's place.
func TestRetiredAndNewSpellingTogetherAreRefused(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"params", strings.Replace(retiredFile, `fence_start: "32"`, `token_source: incr`, 1),
			`x.yaml:4:19: params.fencing: is the retired spelling of params.token_source, which this file also sets; keep token_source (where the fencing tokens come from) and remove fencing`},
		{"resource", strings.Replace(renamedFile, `token_check: ">"`, `token_check: ">", fencing: ">="`, 1),
			`x.yaml:6:51: resource.fencing: is the retired spelling of resource.token_check, which this file also sets; keep token_check (how the store checks fencing tokens) and remove fencing`},
	} {
		_, err := Parse("x.yaml", []byte(c.file))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, c.want)
		}
	}
}

// Later messages about a renamed key point at the key the file wrote, and
// the shape pass never offers the retired spelling.
func TestRetiredSpellingPlacesLaterMessages(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"bad rule", strings.Replace(retiredFile, `fencing: ">"`, `fencing: ">>"`, 1),
			`x.yaml:6:33: resource.fencing: expected none, ">" or ">=", found ">>"`},
		{"bad source", strings.Replace(retiredFile, `fencing: incr`, `fencing: tabel`, 1),
			`x.yaml:4:19: params.fencing: expected incr or none, found "tabel"`},
		{"unknown resource key", strings.Replace(renamedFile, `initial: 7`, `inital: 7`, 1),
			`x.yaml:6:12: resource.inital: unknown field "inital"; expected one of initial, token_check, reliable (did you mean initial?)`},
	} {
		_, err := Parse("x.yaml", []byte(c.file))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, c.want)
		}
	}
}

// The catalogue is written in the current words: no file of it is read
// with a warning (a retired spelling, a translated ZooKeeper name, a
// fault that can never fire), so a lesson never teaches an old key.
func TestCatalogueReadsWithoutWarnings(t *testing.T) {
	entries, err := catalogFS.ReadDir("catalog")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := catalogFS.ReadFile("catalog/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		sc, err := Parse(e.Name(), data)
		if err != nil {
			t.Fatal(err)
		}
		if len(sc.Warnings) > 0 {
			t.Errorf("%s is read with warnings:\n%s", e.Name(), strings.Join(warningLines(sc), "\n"))
		}
	}
}
