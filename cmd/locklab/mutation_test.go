package main

// The mutation gate (issue 10, item 6). Each mutant in
// testdata/mutants/mutants.yaml is one realistic implementation mistake: a
// file, an exact snippet of it and what the snippet becomes. The test builds
// the gate's runner (internal/mutantrun) once per mutant with `go build
// -overlay` — the mutated file lives in a temporary directory, the tree is
// never touched — and the runner judges catalogue scenarios in its own
// process, one after another, exactly as `locklab run ID --json` does,
// until one run kills the mutant: the scenario the mutant names as its
// killer first, then the rest of the catalogue, so a mutant usually costs
// its build and one run. The runner links package scenarios and nothing
// above it: the reports, the CLI and their dependencies are not rebuilt or
// linked per mutant (issue 19: that was most of a mutant's cost). A mutant
// the catalogue does not kill is then built as the whole CLI, and the
// bounded explorations it lists run with it. Mutants are built and run
// GOMAXPROCS at a time. A mutant is killed when some run's verdict does
// not match its expectation, a run ends in an error or a panic (or hangs
// past a generous guard), or a listed exploration finds a violation that
// the unmutated tree does not. Every mutant must be killed: a survivor
// means the catalogue cannot tell that mistake from correct code, and the
// fix is a scenario that can.
//
// Equivalent mutants (no run can tell them apart from the original) are
// listed in the same file with the reason and are not built; their snippets
// must still be found, so a refactor cannot silently turn the listing stale.
//
// scripts/test.sh runs the gate as a step of its own, after the race pass
// (which skips it): its work is in the builds and runs of subprocesses, and
// -race on the test binary that drives them buys nothing.
//
//	go test ./cmd/locklab -run TestMutants -v                 # the table
//	LOCKLAB_MUTANTS=quorum-half,zk-lexical-sort go test ...   # a few of them

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/locklab/locklab/scenarios"
	"go.yaml.in/yaml/v3"
)

// mutant is one entry of testdata/mutants/mutants.yaml.
type mutant struct {
	ID          string `yaml:"id"`
	Area        string `yaml:"area"`
	File        string `yaml:"file"`
	Mistake     string `yaml:"mistake"`
	Original    string `yaml:"original"`
	Replacement string `yaml:"replacement"`
	// Equivalent, when set, says why no run can tell this mutant from the
	// original code; the mutant is checked for its snippet and skipped.
	Equivalent string `yaml:"equivalent"`
	// Explore lists bounded explorations (arguments of `locklab explore`,
	// which must include --seed and --runs) that may also kill the mutant.
	Explore [][]string `yaml:"explore"`
	// Killer names the catalogue scenario that kills the mutant. It runs
	// first, so a mutant usually costs one run after its build; the rest
	// of the catalogue runs only when it does not kill, and then the gate
	// fails, naming the scenario that did, so the name never goes stale.
	Killer string `yaml:"killer"`

	line int // where the entry starts in the data file
}

const mutantsFile = "testdata/mutants/mutants.yaml"

// runGuard bounds one CLI run. No verdict depends on it: a correct run of
// the catalogue takes well under a second; only a mutant that makes the
// simulation loop for ever meets it, and that counts as a kill ("hang").
const runGuard = 3 * time.Minute

func loadMutants(t *testing.T) []mutant {
	t.Helper()
	data, err := os.ReadFile(mutantsFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", mutantsFile, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode {
		t.Fatalf("%s: expected a list of mutants", mutantsFile)
	}
	var out []mutant
	seen := map[string]bool{}
	for i, n := range doc.Content[0].Content {
		var m mutant
		if err := n.Decode(&m); err != nil {
			t.Fatalf("%s:%d: mutants[%d]: %v", mutantsFile, n.Line, i, err)
		}
		m.line = n.Line
		switch {
		case m.ID == "" || m.File == "" || m.Mistake == "" || m.Original == "":
			t.Fatalf("%s:%d: mutants[%d]: id, file, mistake and original are required", mutantsFile, n.Line, i)
		case m.Original == m.Replacement:
			t.Fatalf("%s:%d: mutant %s: replacement equals the original", mutantsFile, n.Line, m.ID)
		case seen[m.ID]:
			t.Fatalf("%s:%d: mutant %s: duplicate id", mutantsFile, n.Line, m.ID)
		}
		for _, args := range m.Explore {
			if !slices.Contains(args, "--seed") || !slices.Contains(args, "--runs") {
				t.Fatalf("%s:%d: mutant %s: explore %q needs a fixed --seed and a bounded --runs", mutantsFile, n.Line, m.ID, args)
			}
		}
		seen[m.ID] = true
		out = append(out, m)
	}
	return out
}

// moduleRoot is the directory holding go.mod, above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// mutate returns the source of m.File with its snippet replaced, or an error
// naming the data file's line when the snippet is missing or ambiguous.
func (m mutant) mutate(root string) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join(root, m.File))
	if err != nil {
		return nil, fmt.Errorf("%s:%d: mutant %s: %v", mutantsFile, m.line, m.ID, err)
	}
	switch n := strings.Count(string(src), m.Original); n {
	case 1:
		return []byte(strings.Replace(string(src), m.Original, m.Replacement, 1)), nil
	case 0:
		return nil, fmt.Errorf("%s:%d: mutant %s: original snippet not found in %s (was the code refactored? update the mutant, do not drop it)", mutantsFile, m.line, m.ID, m.File)
	default:
		return nil, fmt.Errorf("%s:%d: mutant %s: original snippet occurs %d times in %s; expected exactly once (make it longer)", mutantsFile, m.line, m.ID, n, m.File)
	}
}

func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("the go command is not on PATH; the mutation gate needs it (CI=true)")
	}
	t.Skip("the go command is not on PATH; skipping the mutation gate")
	return ""
}

// The packages the gate builds: its runner for every mutant, the whole CLI
// only for explorations (`locklab explore`).
const (
	runnerPkg = "./cmd/locklab/internal/mutantrun"
	cliPkg    = "./cmd/locklab"
)

// build builds pkg into dir/name, with overlay (a path to an overlay JSON
// file) when not empty.
func build(goBin, root, dir, name, overlay, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	// No symbol table or DWARF: the binary only runs, and linking is a
	// large part of rebuilding a mutant. A mutated function body changes
	// its package's archive, so every package above it recompiles too;
	// without optimization and inlining (-N -l) the compiler does about
	// half the work (measured: 11.3 s against 5.8 s for a mutant of
	// sim/resource.go). It changes how fast a run goes, never what it
	// does: a run is a deterministic simulation, and the catalogue's runs
	// take milliseconds either way. The unmutated builds use the same
	// flags, so the standard library and the dependencies are compiled
	// once and shared through the build cache (an overlay only changes
	// the action ids of the mutated package and those above it).
	// -dwarf=false: the linker drops DWARF anyway (-w), so the compiler
	// need not produce it (a runner for a mutant of sim/resource.go:
	// 5.3 s of CPU with it, 4.5 s without; the whole CLI was 7.3 s).
	args := []string{"build", "-gcflags=github.com/locklab/locklab/...=-N -l -dwarf=false", "-ldflags=-s -w", "-o", out}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(args, pkg)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, stderr.String())
	}
	return out, nil
}

// runnerPackages is the set of the module's package directories (from the
// module root, slash-separated) that the runner links.
func runnerPackages(goBin, root string) (map[string]bool, error) {
	cmd := exec.Command(goBin, "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", runnerPkg)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %v", runnerPkg, err)
	}
	linked := map[string]bool{}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return nil, err
		}
		linked[filepath.ToSlash(rel)] = true
	}
	return linked, nil
}

// unlinked names the mutants of files the runner does not link that have
// no explorations to kill them.
func unlinked(live []mutant, linked map[string]bool) []error {
	var errs []error
	for _, m := range live {
		if pkg := filepath.Dir(filepath.ToSlash(m.File)); !linked[pkg] && len(m.Explore) == 0 {
			errs = append(errs, fmt.Errorf("%s:%d: mutant %s mutates %s, which the gate's runner (%s) does not link: list explorations that can kill it, or mutate code the catalogue runs", mutantsFile, m.line, m.ID, m.File, runnerPkg))
		}
	}
	return errs
}

// outcome is what one run said: a catalogue scenario judged by the runner,
// or an exploration by the CLI.
type outcome struct {
	run    string // the scenario id, or "explore ARGS"
	killed bool
	why    string
}

// runCatalogue runs the scenarios ids, in that order, in one process of
// the runner at bin, and returns one outcome per id it judged: up to and
// including the first kill, or every id when all is set. A run that
// prints nothing for runGuard is a hang; a process that ends before
// judging every id (a panic outside the run's goroutine, an os.Exit)
// kills the first id it did not judge. Which outcomes come back depends
// only on what the runs did.
func runCatalogue(bin string, ids []string, all bool) []outcome {
	args := ids
	if all {
		args = append([]string{"-all"}, ids...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Dir(bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		return []outcome{{run: ids[0], killed: true, why: "error: " + err.Error()}}
	}
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
		io.Copy(io.Discard, stdout)
	}()
	var out []outcome
	guard := time.NewTimer(runGuard)
	defer guard.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				werr := cmd.Wait()
				if len(out) == len(ids) || (len(out) > 0 && out[len(out)-1].killed && !all) {
					return out
				}
				why := "error: " + firstLine(stderr.String())
				if strings.TrimSpace(stderr.String()) == "" {
					why = fmt.Sprintf("error: the runner ended (%v) before judging it", werr)
				}
				return append(out, outcome{run: ids[len(out)], killed: true, why: why})
			}
			var o struct {
				Run    string `json:"run"`
				Killed bool   `json:"killed"`
				Why    string `json:"why"`
			}
			if err := json.Unmarshal(line, &o); err != nil || len(out) == len(ids) || o.Run != ids[len(out)] {
				cmd.Process.Kill()
				for range lines {
				}
				cmd.Wait()
				id := ids[min(len(out), len(ids)-1)]
				return append(out, outcome{run: id, killed: true, why: "error: the runner printed " + firstLine(string(line))})
			}
			out = append(out, outcome{run: o.Run, killed: o.Killed, why: o.Why})
			guard.Reset(runGuard)
		case <-guard.C:
			cmd.Process.Kill()
			for range lines {
			}
			cmd.Wait()
			return append(out, outcome{run: ids[len(out)], killed: true, why: "hang"})
		}
	}
}

// runExploration runs a bounded exploration with the CLI at bin; it kills
// when it finds a violation (exit 1) and errs on anything but 0 or 1.
func runExploration(bin, dir string, args []string) outcome {
	o := outcome{run: "explore " + strings.Join(args, " ")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		o.killed, o.why = true, "error: "+err.Error()
		return o
	}
	full := append([]string{"explore"}, args...)
	full = append(full, "--workers", "1", "--out", filepath.Join(dir, "counterexample.yaml"), "--json")
	code, _, stderr, hung := runBin(bin, full...)
	switch {
	case hung:
		o.killed, o.why = true, "hang"
	case code == 1:
		o.killed, o.why = true, "violation found"
	case code != 0:
		o.killed, o.why = true, "error: "+firstLine(stderr)
	}
	return o
}

func runBin(bin string, args ...string) (code int, stdout []byte, stderr string, hung bool) {
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = filepath.Dir(bin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, out.Bytes(), errb.String(), true
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.Bytes(), errb.String(), false
	case errors.As(err, &ee):
		return ee.ExitCode(), out.Bytes(), errb.String(), false
	default:
		return -1, out.Bytes(), err.Error(), false
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// catalogueIDs is every catalogue id, in the catalogue's order.
func catalogueIDs(t *testing.T) []string {
	t.Helper()
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID)
	}
	if len(ids) == 0 {
		t.Fatal("the catalogue is empty")
	}
	return ids
}

// judgeOriginal runs the whole catalogue with the unmutated runner at
// runner, in GOMAXPROCS processes side by side, and the explorations with
// the unmutated CLI at cli, GOMAXPROCS at a time; it returns every outcome
// in a fixed order (catalogue order, then explorations).
func judgeOriginal(runner, cli, dir string, ids []string, explore [][]string) []outcome {
	parts := max(1, runtime.GOMAXPROCS(0))
	size := (len(ids) + parts - 1) / parts
	var chunks [][]string
	for from := 0; from < len(ids); from += size {
		chunks = append(chunks, ids[from:min(from+size, len(ids))])
	}
	judged := make([][]outcome, len(chunks))
	explored := make([]outcome, len(explore))
	var wg sync.WaitGroup
	for i, c := range chunks {
		wg.Go(func() { judged[i] = runCatalogue(runner, c, true) })
	}
	wg.Wait()
	for from := 0; from < len(explore); from += parts {
		for i := from; i < min(from+parts, len(explore)); i++ {
			wg.Go(func() { explored[i] = runExploration(cli, filepath.Join(dir, fmt.Sprint("explore-", i)), explore[i]) })
		}
		wg.Wait()
	}
	return append(slices.Concat(judged...), explored...)
}

// hunt judges a mutant until something kills it: its named killer first,
// then the rest of the catalogue in order, all in one runner process; then,
// only when none of them killed it, its explorations with a CLI built with
// the same overlay. Which runs were made, and so the table, depends only
// on the outcomes.
func hunt(goBin, root, runner, overlay, dir string, m mutant, ids []string) ([]outcome, error) {
	var order []string
	if m.Killer != "" {
		order = append(order, m.Killer)
	}
	for _, id := range ids {
		if id != m.Killer {
			order = append(order, id)
		}
	}
	if out := runCatalogue(runner, order, false); len(out) > 0 && out[len(out)-1].killed {
		return out[len(out)-1:], nil
	}
	if len(m.Explore) == 0 {
		return nil, nil
	}
	cli, err := build(goBin, root, dir, "locklab", overlay, cliPkg)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: mutant %s does not compile: %v", mutantsFile, m.line, m.ID, err)
	}
	for i, args := range m.Explore {
		if o := runExploration(cli, filepath.Join(dir, fmt.Sprint("explore-", i)), args); o.killed {
			return []outcome{o}, nil
		}
	}
	return nil, nil
}

// buildMutant writes m's mutated file into dir and builds the runner with
// it through an overlay; the tree is never touched. It returns the runner
// and the overlay, for a CLI build should the mutant need explorations.
func buildMutant(goBin, root, dir string, m mutant) (runner, overlay string, err error) {
	src, err := m.mutate(root)
	if err != nil {
		return "", "", err
	}
	mutated := filepath.Join(dir, filepath.Base(m.File))
	overlay = filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, m.File): mutated}})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(mutated, src, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		return "", "", err
	}
	runner, err = build(goBin, root, dir, "mutantrun", overlay, runnerPkg)
	if err != nil {
		// A mutant must compile: one that does not proves nothing.
		return "", "", fmt.Errorf("%s:%d: mutant %s does not compile: %v", mutantsFile, m.line, m.ID, err)
	}
	return runner, overlay, nil
}

func TestMutantsAreKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("the mutation gate builds the CLI once per mutant; skipped under -short")
	}
	mutants := loadMutants(t)
	root := moduleRoot(t)

	// Every snippet must be found, equivalent mutants' included.
	var only []string
	if s := os.Getenv("LOCKLAB_MUTANTS"); s != "" {
		only = strings.Split(s, ",")
	}
	var live, equivalent []mutant
	for _, m := range mutants {
		if _, err := m.mutate(root); err != nil {
			t.Fatal(err)
		}
		if only != nil && !slices.Contains(only, m.ID) {
			continue
		}
		if m.Equivalent != "" {
			equivalent = append(equivalent, m)
		} else {
			live = append(live, m)
		}
	}
	if only == nil && len(live) < 15 {
		t.Fatalf("%d non-equivalent mutants; the gate asks for at least 15", len(live))
	}
	goBin := goTool(t)
	dir := t.TempDir()

	// A mutant of a file the runner does not link could only be killed by
	// its explorations (the CLI); with none, it would survive for want of
	// a build, not of a scenario. Say so instead.
	linked, err := runnerPackages(goBin, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range unlinked(live, linked) {
		t.Error(err)
	}

	// The unmutated tree must pass everything the mutants are judged by.
	baseRunner, err := build(goBin, root, dir, "mutantrun-original", "", runnerPkg)
	if err != nil {
		t.Fatal(err)
	}
	ids := catalogueIDs(t)
	var explorations [][]string
	for _, m := range live {
		explorations = append(explorations, m.Explore...)
	}
	var baseCLI string
	if len(explorations) > 0 {
		if baseCLI, err = build(goBin, root, dir, "locklab-original", "", cliPkg); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range judgeOriginal(baseRunner, baseCLI, dir, ids, explorations) {
		if o.killed {
			t.Fatalf("the unmutated tree fails %s: %s; the gate cannot judge mutants against it", o.run, o.why)
		}
	}

	type result struct {
		m       mutant
		killers []outcome
		err     error
	}
	// Mutants are built and hunted GOMAXPROCS at a time: a build is mostly
	// one package chain and a single-threaded link, so two of them keep two
	// cores busier than one build with its runs after it. Results land in
	// the mutants' order, whichever finishes first.
	results := make([]result, len(live))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				m := live[i]
				mdir := filepath.Join(dir, m.ID)
				runner, overlay, err := buildMutant(goBin, root, mdir, m)
				r := result{m: m, err: err}
				if err == nil {
					r.killers, r.err = hunt(goBin, root, runner, overlay, mdir, m, ids)
				}
				results[i] = r
			}
		}()
	}
	for i := range live {
		next <- i
	}
	close(next)
	wg.Wait()

	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mutant\tarea\tkilled by")
	for _, r := range results {
		var by string
		switch {
		case r.err != nil:
			by = "DOES NOT COMPILE"
		case len(r.killers) == 0:
			by = "SURVIVED"
		default:
			k := r.killers[0]
			by = fmt.Sprintf("%s: %s", k.run, k.why)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.m.ID, r.m.Area, by)
	}
	for _, m := range equivalent {
		fmt.Fprintf(tw, "%s\t%s\tequivalent, not run: %s\n", m.ID, m.Area, firstLine(m.Equivalent))
	}
	tw.Flush()
	t.Logf("mutation gate, %d mutants against %d scenarios:\n%s", len(results), len(ids), table.String())

	for _, r := range results {
		switch {
		case r.err != nil:
			t.Error(r.err)
		case len(r.killers) == 0:
			t.Errorf("%s:%d: mutant %s survived: no catalogue scenario or exploration tells %q (%s) from the correct code; add a scenario that does", mutantsFile, r.m.line, r.m.ID, r.m.Mistake, r.m.File)
		case r.m.Killer != "" && r.killers[0].run != r.m.Killer:
			t.Errorf("%s:%d: mutant %s: its killer %s no longer kills it; %s does (%s): name that one", mutantsFile, r.m.line, r.m.ID, r.m.Killer, r.killers[0].run, r.killers[0].why)
		}
	}
}

// TestMutantSnippets runs under -short too: every mutant's snippet is found
// exactly once, and a snippet that is missing or ambiguous is an error that
// names the data file's line.
func TestMutantSnippets(t *testing.T) {
	root := moduleRoot(t)
	ms := loadMutants(t)
	for _, m := range ms {
		if _, err := m.mutate(root); err != nil {
			t.Error(err)
		}
	}
	gone := mutant{ID: "gone", File: "algorithms/redlock.go", Original: "no such code", line: 7}
	if _, err := gone.mutate(root); err == nil || !strings.Contains(err.Error(), mutantsFile+":7: mutant gone: original snippet not found in algorithms/redlock.go") {
		t.Errorf("missing snippet: %v", err)
	}
	twice := mutant{ID: "twice", File: "algorithms/redlock.go", Original: "r.Params", line: 9}
	if _, err := twice.mutate(root); err == nil || !strings.Contains(err.Error(), "occurs") {
		t.Errorf("ambiguous snippet: %v", err)
	}
	// One parse of the catalogue for all killers (scenarios.Get parses it
	// whole at each call, which under -race cost most of this test).
	ids := catalogueIDs(t)
	for _, m := range ms {
		if m.Killer == "" || slices.Contains(ids, m.Killer) {
			continue
		}
		_, err := scenarios.Get(m.Killer)
		t.Errorf("%s:%d: mutant %s: killer %q is not a catalogue scenario: %v", mutantsFile, m.line, m.ID, m.Killer, err)
	}
	areas := map[string]bool{}
	for _, m := range ms {
		if m.Equivalent == "" {
			areas[m.Area] = true
		}
	}
	for _, a := range []string{"release", "quorum", "validity", "drift", "renewal ownership", "fencing comparison",
		"resource storage", "zookeeper predecessor", "ordering", "session state"} {
		if !areas[a] {
			t.Errorf("no live mutant in area %q", a)
		}
	}
}

// TestRunCatalogueBlamesTheFirstUnjudgedRun: a runner that dies part-way
// (a panic on another goroutine ends the whole process) kills the mutant
// on the first scenario it did not judge, with its stderr as the reason;
// one that prints something else than the next id's line is an error too.
func TestRunCatalogueBlamesTheFirstUnjudgedRun(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to play a runner")
	}
	dir := t.TempDir()
	fake := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!"+sh+"\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crash := fake("crash", `echo '{"run":"a","killed":false}'; echo 'panic: boom' >&2; echo 'goroutine 7 [running]:' >&2; exit 2`)
	got := runCatalogue(crash, []string{"a", "b", "c"}, false)
	want := []outcome{{run: "a"}, {run: "b", killed: true, why: "error: panic: boom"}}
	if !slices.Equal(got, want) {
		t.Errorf("crash: got %+v, want %+v", got, want)
	}
	kill := fake("kill", `echo '{"run":"a","killed":false}'; echo '{"run":"b","killed":true,"why":"liveness ok (expected violated)"}'`)
	got = runCatalogue(kill, []string{"a", "b", "c"}, false)
	want = []outcome{{run: "a"}, {run: "b", killed: true, why: "liveness ok (expected violated)"}}
	if !slices.Equal(got, want) {
		t.Errorf("kill: got %+v, want %+v", got, want)
	}
	pass := fake("pass", `echo '{"run":"a","killed":false}'; echo '{"run":"b","killed":false}'`)
	if got = runCatalogue(pass, []string{"a", "b"}, true); !slices.Equal(got, []outcome{{run: "a"}, {run: "b"}}) {
		t.Errorf("pass: got %+v", got)
	}
	silent := fake("silent", `exit 0`)
	got = runCatalogue(silent, []string{"a"}, false)
	if len(got) != 1 || !got[0].killed || got[0].run != "a" || !strings.Contains(got[0].why, "before judging it") {
		t.Errorf("silent: got %+v", got)
	}
	wrong := fake("wrong", `echo '{"run":"b","killed":false}'`)
	got = runCatalogue(wrong, []string{"a", "b"}, false)
	if len(got) != 1 || !got[0].killed || got[0].why != `error: the runner printed {"run":"b","killed":false}` {
		t.Errorf("wrong order: got %+v", got)
	}
}

// TestRunnerLinksWhatMutantsMutate: the runner links the catalogue's
// packages and not the reports or the CLI, and a mutant of a file it does
// not link is refused unless explorations can kill it.
func TestRunnerLinksWhatMutantsMutate(t *testing.T) {
	goBin := goTool(t)
	root := moduleRoot(t)
	linked, err := runnerPackages(goBin, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"sim", "algorithms", "checker", "scenarios", "cmd/locklab/internal/mutantrun"} {
		if !linked[pkg] {
			t.Errorf("the runner does not link %s: %v", pkg, slices.Sorted(maps.Keys(linked)))
		}
	}
	for _, pkg := range []string{"reports", "cmd/locklab"} {
		if linked[pkg] {
			t.Errorf("the runner links %s", pkg)
		}
	}
	ms := []mutant{
		{ID: "in-reports", File: "reports/run.go", line: 3},
		{ID: "in-sim", File: "sim/resource.go", line: 5},
		{ID: "explored", File: "cmd/locklab/explore.go", Explore: [][]string{{"redlock", "--seed", "1", "--runs", "2"}}, line: 7},
	}
	errs := unlinked(ms, linked)
	if len(errs) != 1 || errs[0].Error() != mutantsFile+":3: mutant in-reports mutates reports/run.go, which the gate's runner (./cmd/locklab/internal/mutantrun) does not link: list explorations that can kill it, or mutate code the catalogue runs" {
		t.Errorf("unlinked: %v", errs)
	}
}
