package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/reports"
	"github.com/locklab/locklab/scenarios"
)

var updateDerived = flag.Bool("derived.update", false, "rewrite the derived blocks of README.md and docs/ (go generate ./...)")

// regenerate is what the fast check tells a contributor to run.
const regenerate = "go generate ./..."

// derivedBlock is text between two markers in a hand-written file that is
// rendered from the code, so that a list in the documentation cannot fall
// behind what it lists.
type derivedBlock struct {
	file   string // from the repository's root
	name   string // the markers are <!-- name:begin … --> and <!-- name:end -->
	render func() (string, error)
}

func derivedBlocks() []derivedBlock {
	help := func(args ...string) func() (string, error) {
		return func() (string, error) {
			var b bytes.Buffer
			if err := runHelp(args, &b); err != nil {
				return "", err
			}
			return "```text\n" + b.String() + "```\n", nil
		}
	}
	return []derivedBlock{
		{"README.md", "catalogue", catalogueTable},
		{"docs/cli.md", "help", help()},
		{"docs/scenario-format.md", "help-scenario", help("scenario")},
	}
}

func beginMarker(name string) string {
	return "<!-- " + name + ":begin (generated: " + regenerate + "; do not edit) -->"
}
func endMarker(name string) string { return "<!-- " + name + ":end -->" }

// catalogueTable is README.md's table of the catalogue: every scenario,
// lesson by lesson (a failure beside its fix), with what it expects.
func catalogueTable() (string, error) {
	all, err := scenarios.Catalogue()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| id | what happens | expected |\n| --- | --- | --- |\n")
	for _, l := range reports.Lessons(all) {
		for _, s := range l.Scenarios() {
			title := strings.ReplaceAll(s.Title, "|", `\|`)
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.ID, title, expectation(s.Expect))
		}
	}
	return b.String(), nil
}

// expectation says in words what a scenario's expect: block asserts.
func expectation(e scenarios.Expect) string {
	var violated, ok []string
	for _, p := range []struct {
		name string
		st   checker.Status
	}{{"mutual exclusion", e.MutualExclusion}, {"resource", e.Resource}, {"liveness", e.Liveness}} {
		switch p.st {
		case checker.Violated:
			violated = append(violated, p.name)
		case checker.OK:
			ok = append(ok, p.name)
		}
	}
	switch {
	case len(violated) == 0 && len(ok) == 3:
		return "all ok"
	case len(violated) == 0:
		return strings.Join(ok, ", ") + " ok"
	case len(ok) == 0:
		return strings.Join(violated, ", ") + " violated"
	}
	return strings.Join(violated, ", ") + " violated; " + strings.Join(ok, ", ") + " ok"
}

// TestDerivedFiles is the fast check that every derived file is current
// (no simulation: a few seconds). It names the stale file and the command
// that rewrites it; with -derived.update it rewrites the blocks itself.
// The golden digests need every catalogue run to regenerate, so here they
// are checked for coverage only: every catalogue scenario that
// TestGoldenTraces pins has its lines, and no line names a scenario the
// catalogue no longer has. The library table's verdicts need locktest's
// runs: TestLibraryTable checks them.
func TestDerivedFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	stale, err := checkDerived(root, derivedBlocks(), *updateDerived)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		t.Error(s)
	}
	checkGoldenCoverage(t, filepath.Join(root, "runner", "testdata", "golden-traces.txt"))
}

// checkDerived compares each block under root with what the code renders
// and says which file is stale and how to fix it; with update it rewrites
// the stale blocks instead.
func checkDerived(root string, blocks []derivedBlock, update bool) (stale []string, err error) {
	for _, d := range blocks {
		want, err := d.render()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.file, err)
		}
		path := filepath.Join(root, d.file)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		text := string(data)
		begin, end := beginMarker(d.name), endMarker(d.name)
		i, j := strings.Index(text, begin), strings.Index(text, end)
		if i < 0 || j < i {
			stale = append(stale, fmt.Sprintf("%s lacks the markers %q … %q of its derived %s block", d.file, begin, end, d.name))
			continue
		}
		if text[i+len(begin):j] == "\n"+want {
			continue
		}
		if update {
			if err := os.WriteFile(path, []byte(text[:i+len(begin)]+"\n"+want+text[j:]), 0o644); err != nil {
				return nil, err
			}
			continue
		}
		stale = append(stale, fmt.Sprintf("%s is stale: its %s block differs from what the code renders; run `%s`", d.file, d.name, regenerate))
	}
	return stale, nil
}

// The check names the stale file and the command, leaves a current one
// alone, and -derived.update makes the stale one current.
func TestDerivedFilesNamesTheStaleFile(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	blocks := []derivedBlock{
		{"docs/a.md", "x", func() (string, error) { return "new\n", nil }},
		{"docs/b.md", "y", func() (string, error) { return "same\n", nil }},
	}
	write := func(name, marker, body string) {
		text := "# T\n\n" + beginMarker(marker) + "\n" + body + endMarker(marker) + "\ntail\n"
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "x", "old\n")
	write("docs/b.md", "y", "same\n")
	stale, err := checkDerived(root, blocks, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "docs/a.md is stale: its x block differs from what the code renders; run `go generate ./...`"
	if len(stale) != 1 || stale[0] != want {
		t.Fatalf("stale %q, want [%q]", stale, want)
	}
	if _, err := checkDerived(root, blocks, true); err != nil {
		t.Fatal(err)
	}
	if stale, _ := checkDerived(root, blocks, false); len(stale) != 0 {
		t.Errorf("after the update: %q", stale)
	}
	data, _ := os.ReadFile(filepath.Join(root, "docs/a.md"))
	if !strings.Contains(string(data), "\nnew\n"+endMarker("x")+"\ntail\n") {
		t.Errorf("rewritten file:\n%s", data)
	}
}

// goldenSeeds are the seeds TestGoldenTraces pins for every catalogue
// scenario of at most goldenMaxClients clients (scenarios/scenarios_test.go).
var goldenSeeds = []string{"1", "7"}

const goldenMaxClients = 20

func checkGoldenCoverage(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v; run `%s`", err, regenerate)
	}
	defer f.Close()
	have := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 3 {
			have[fields[0]+" "+fields[1]] = true
		}
	}
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	for _, s := range all {
		if s.Clients.Count > goldenMaxClients {
			continue
		}
		for _, seed := range goldenSeeds {
			key := s.ID + " " + seed
			pinned[key] = true
			if !have[key] {
				t.Errorf("runner/testdata/golden-traces.txt is stale: no digest for %s seed %s; run `%s`", s.ID, seed, regenerate)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(have)) {
		if !pinned[key] {
			t.Errorf("runner/testdata/golden-traces.txt is stale: %q is no catalogue scenario and seed it pins; run `%s`", key, regenerate)
		}
	}
}

// The README stays a page a newcomer reads (at most 300 lines: the guides
// in docs/ hold the rest), and every relative link of it and the guides
// names a file of the repository, so a moved file breaks a test, not a
// reader.
func TestReadmeAndGuidesLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > 300 {
		t.Errorf("README.md has %d lines, over 300: move the detail into a guide in docs/", n)
	}
	guides, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	link := regexp.MustCompile(`\]\(([^)\s#]+)(#[^)\s]*)?\)`)
	for _, f := range append([]string{filepath.Join(root, "README.md")}, guides...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s links to %s, which does not exist", rel, target)
			}
		}
	}
}
