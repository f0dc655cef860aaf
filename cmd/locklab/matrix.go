package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/reports"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

const matrixUsage = `Usage: locklab matrix [--seeds N] [--classes a,b] [--algorithms x,y]
                      [--workers K] [--json] [--examples DIR] [--report FILE]

Runs every lock algorithm against every fault class: for each pair, N runs,
each with a random schedule of one to four faults of that class (times,
targets and magnitudes drawn from the run's seed, lengths scaled by the TTL).
Prints, per property, the share of runs that violated it.

Every run uses the same setup: 3 clients with 2 lock cycles each, work
100ms..1.5s, TTL 2s, 20s simulated; quorum algorithms get 5 Redis nodes
A..E; the resource checks fencing tokens (">") for algorithms that issue
them. The result depends only on N, the classes and the algorithms — never
on --workers or the machine.

Flags:
  --seeds N          runs per cell, with seeds 1..N (default 20)
  --classes LIST     fault classes, comma-separated (default all; see below)
  --algorithms LIST  algorithms, comma-separated (default all):
                     %s
  --workers K        runs in parallel (default: the number of CPUs)
  --json             print one JSON object: options, setups, and per cell the
                     counts, shares and the first violating run (seed and
                     schedule)
  --report FILE      write an HTML heatmap (algorithm × class, per property)
                     whose cells link to reports of their first violating
                     run, written beside it in FILE-examples/; an existing
                     FILE is replaced only with --force. "-": the heatmap
                     (without example links) on stdout, the table on stderr
  --force            replace an existing --report FILE
  --examples DIR     write the first violating run of each cell as a scenario
                     file DIR/ALGORITHM-CLASS.yaml, replayable with
                     'locklab run DIR/ALGORITHM-CLASS.yaml'
  --max-seeds N      the largest --seeds accepted (default 1000000); runs
                     are streamed, so memory does not grow with --seeds

Fault classes:
%s
Exit status: 0 when the matrix ran (violations are findings, not failures),
2 on bad input (unknown class or algorithm, bad flag, a --report that is a
device, a pipe or a directory), 3 when the table was printed but an
--examples file or the --report could not be written, 130/143 when SIGINT/
SIGTERM stopped it: the runs in flight finish and the table (and --json,
--examples, --report) covers the runs done. A second signal quits at once.
`

func matrixHelp() string {
	var cls strings.Builder
	for _, c := range faults.Classes() {
		fmt.Fprintf(&cls, "  %-10s %s\n", c, faults.ClassSummary(c))
	}
	return fmt.Sprintf(matrixUsage, wrapList(matrix.Rows(), 21, 78), cls.String())
}

// wrapList joins names with ", ", breaking lines at width and indenting
// continuation lines by indent.
func wrapList(names []string, indent, width int) string {
	var b strings.Builder
	col := indent
	for i, n := range names {
		item := n
		if i < len(names)-1 {
			item += ","
		}
		if i > 0 {
			if col+1+len(item) > width {
				b.WriteString("\n" + strings.Repeat(" ", indent))
				col = indent
			} else {
				b.WriteString(" ")
				col++
			}
		}
		b.WriteString(item)
		col += len(item)
	}
	return b.String()
}

// matrixOutput is the JSON shape of 'locklab matrix --json'. The worker
// count is left out on purpose: it never changes the result, and leaving it
// out keeps the output byte-identical across machines.
type matrixOutput struct {
	Options matrixOptionsOutput `json:"options"`
	Setups  []matrix.Setup      `json:"setups"`
	Cells   []matrixCellOutput  `json:"cells"`
	// Interrupted is set when SIGINT/SIGTERM stopped the matrix; each
	// cell's runs then count the runs done.
	Interrupted bool `json:"interrupted,omitempty"`
}

type matrixOptionsOutput struct {
	Seeds      int            `json:"seeds"`
	Classes    []faults.Class `json:"classes"`
	Algorithms []string       `json:"algorithms"`
}

type matrixCellOutput struct {
	matrix.Cell
	Shares      matrix.Shares `json:"shares"`
	ExampleFile string        `json:"example_file,omitempty"`
}

func runMatrix(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("matrix", matrixHelp(), stdout)
	seedsText := fs.String("seeds", strconv.Itoa(matrix.DefaultSeeds), "")
	classesText := fs.String("classes", "all", "")
	algsText := fs.String("algorithms", "", "")
	workersText := fs.String("workers", "", "")
	asJSON := fs.Bool("json", false, "")
	examplesDir := fs.String("examples", "", "")
	reportPath := fs.String("report", "", "")
	maxSeedsText := fs.String("max-seeds", strconv.Itoa(matrixMaxSeeds), "")
	force := fs.Bool("force", false, "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("matrix takes no arguments, got %q (see 'locklab help matrix')", pos[0])
	}
	if err := checkMatrixReport(*reportPath, *asJSON, *force); err != nil {
		return err
	}
	// With --report -, the heatmap is stdout and the table goes to stderr.
	textOut := stdout
	if *reportPath == "-" {
		textOut = stderr
	}
	seeds, err := parseMatrixSeeds(*seedsText, *maxSeedsText)
	if err != nil {
		return err
	}
	classes, err := faults.ParseClasses(*classesText)
	if err != nil {
		return usagef("--classes: %v", err)
	}
	algs, err := parseAlgorithms(*algsText)
	if err != nil {
		return err
	}
	workers := 0
	if *workersText != "" {
		n, err := parseCount("--workers", *workersText, 1, maxExploreWorkers)
		if err != nil {
			return err
		}
		workers = int(n)
	}
	if *examplesDir != "" {
		if err := os.MkdirAll(*examplesDir, 0o755); err != nil {
			return usagef("--examples: cannot create directory: %v", err)
		}
	}

	opt := matrix.Options{Seeds: seeds, Classes: classes, Algorithms: algs, Workers: workers}
	res, signalled, err := matrixShowingProgress(stderr, opt)
	if err != nil {
		return err
	}
	exit := func(err error) error {
		if err == nil && signalled != 0 {
			return &exitError{signalled}
		}
		return err
	}

	// The examples are written first (the table names them), then the
	// table is printed, then the heatmap: a write that fails leaves the
	// table printed and exits 3 (issue 32).
	files, writeErr, err := writeMatrixExamples(res, *examplesDir)
	if err != nil {
		return err
	}
	if *reportPath == "-" {
		if err := reports.WriteMatrix(stdout, matrixData(res)); err != nil {
			return err
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, matrixJSON(res, files)); err != nil {
			return err
		}
	} else {
		printMatrix(textOut, res, files)
	}
	if writeErr == nil && *reportPath != "" && *reportPath != "-" {
		if writeErr = writeMatrixReport(*reportPath, res); writeErr == nil && !*asJSON {
			fmt.Fprintf(textOut, "\nReport: %s\n", term(*reportPath, false))
		}
	}
	if writeErr != nil {
		printErrorLines(stderr, writeErr.Error()+" (the table above stands; exit status 3: an output was not written)")
		return &exitError{exitWriteFailed}
	}
	return exit(nil)
}

// parseMatrixSeeds reads --seeds, bounded by --max-seeds.
func parseMatrixSeeds(seedsText, maxSeedsText string) (int, error) {
	maxSeeds, err := parseCount("--max-seeds", maxSeedsText, 1, 1<<40)
	if err != nil {
		return 0, err
	}
	seeds64, err := strconv.ParseInt(seedsText, 10, 64)
	if err != nil || seeds64 < 1 {
		return 0, usagef("--seeds: expected a number of runs per cell >= 1, got %q", seedsText)
	}
	if seeds64 > maxSeeds {
		return 0, usagef("--seeds: expected at most %d runs per cell (the limit; raise it with --max-seeds), found %d", maxSeeds, seeds64)
	}
	return int(seeds64), nil
}

// matrixShowingProgress runs the matrix, stopped by an interrupt, with a
// progress line on a terminal's stderr; signalled is the signal that
// stopped it (0: none).
func matrixShowingProgress(stderr io.Writer, opt matrix.Options) (res *matrix.Result, signalled int, err error) {
	progress := isTerminal(stderr)
	if progress {
		start := time.Now()
		opt.Progress = func(done, total int) {
			fmt.Fprintf(stderr, "\rmatrix: %d/%d runs (%.0fs)", done, total, time.Since(start).Seconds())
		}
	}
	in := onInterrupt(stderr, "matrix")
	opt.Context = in.ctx
	res, err = matrix.Run(opt)
	signalled = in.stop()
	if progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	return res, signalled, err
}

// writeMatrixExamples writes the first violating run of each cell into dir
// as a scenario file (none without dir) and returns their paths. A write
// that fails is writeErr: the table is still printed, then the exit is 3
// (issue 32); err is a scenario that does not marshal.
func writeMatrixExamples(res *matrix.Result, dir string) (files map[*matrix.Cell]string, writeErr, err error) {
	files = map[*matrix.Cell]string{}
	if dir == "" {
		return files, nil, nil
	}
	for i := range res.Cells {
		c := &res.Cells[i]
		sc := c.ExampleScenario()
		if sc == nil {
			continue
		}
		data, err := sc.Marshal()
		if err != nil {
			return nil, nil, err
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-%s.yaml", c.Algorithm, c.Class))
		if err := writeFileAtomic(path, data); err != nil {
			return files, fmt.Errorf("cannot write example: %w", err), nil
		}
		files[c] = path
	}
	return files, nil, nil
}

// matrixJSON is the --json form of a matrix, naming each cell's example
// file.
func matrixJSON(res *matrix.Result, files map[*matrix.Cell]string) matrixOutput {
	out := matrixOutput{
		Options:     matrixOptionsOutput{Seeds: res.Seeds, Classes: res.Classes, Algorithms: res.Algorithms},
		Setups:      res.Setups,
		Cells:       []matrixCellOutput{},
		Interrupted: res.Interrupted,
	}
	for i := range res.Cells {
		c := &res.Cells[i]
		out.Cells = append(out.Cells, matrixCellOutput{Cell: *c, Shares: c.Shares(), ExampleFile: files[c]})
	}
	return out
}

// matrixMaxSeeds is the default bound of --seeds (raise it with
// --max-seeds). The matrix never holds its runs in memory, so the bound is
// about time, not memory: a million runs per cell is days of work.
const matrixMaxSeeds = 1_000_000

// writeMatrixReport writes the heatmap to path and, beside it in
// PATH-examples/, the report of each cell's first violating run, which the
// heatmap's cells link to.
func writeMatrixReport(path string, res *matrix.Result) error {
	dir := strings.TrimSuffix(path, filepath.Ext(path)) + "-examples"
	data := matrixData(res)
	data.Cells = nil
	for i := range res.Cells {
		c := &res.Cells[i]
		if !c.Applicable {
			continue
		}
		cell := matrixCell(c)
		if sc := c.ExampleScenario(); sc != nil {
			example, err := writeCellExample(dir, c, sc)
			if err != nil {
				return err
			}
			cell.Example = example
		}
		data.Cells = append(data.Cells, cell)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return writeAtomic(path, func(w io.Writer) error { return reports.WriteMatrix(w, data) })
}

// checkMatrixReport refuses a --report that would replace a file without
// --force, names a directory, or shares stdout with --json.
func checkMatrixReport(path string, asJSON, force bool) error {
	switch {
	case path == "-" && asJSON:
		return usagef("--report - and --json both want stdout; write the report to a file")
	case path == "" || path == "-":
		return nil
	case strings.HasSuffix(path, "/") || isDir(path):
		return usagef("--report: %s is a directory; expected a file name such as matrix.html, or - for stdout", term(path, false))
	}
	return checkOutputs(nil, []outputFlag{{"--report", path}}, force)
}

// matrixCell is a cell's shares for the heatmap, without its example.
func matrixCell(c *matrix.Cell) reports.MatrixCell {
	sh := c.Shares()
	return reports.MatrixCell{Algorithm: c.Algorithm, FaultClass: string(c.Class), Runs: c.Checked(),
		MutualExclusion: sh.MutualExclusion, Resource: sh.Resource, Liveness: sh.Liveness}
}

// writeCellExample writes the report (and scenario) of a cell's first
// violating run into dir and returns the heatmap's link to it.
func writeCellExample(dir string, c *matrix.Cell, sc *scenarios.Scenario) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--report: cannot create %s: %w", dir, err)
	}
	run, err := runner.Run(sc, sc.Seed, runner.Options{KeepTrace: true})
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%s.html", c.Algorithm, c.Class)
	yaml := strings.TrimSuffix(name, ".html") + ".yaml"
	if b, err := sc.Marshal(); err == nil {
		if err := writeFileAtomic(filepath.Join(dir, yaml), b); err != nil {
			return "", err
		}
	}
	replay := fmt.Sprintf("locklab run %s --seed %d", filepath.Join(dir, yaml), sc.Seed)
	if err := reports.WriteRunFile(filepath.Join(dir, name), run, nil, replay); err != nil {
		return "", err
	}
	return filepath.Base(dir) + "/" + name, nil
}

// matrixData is the heatmap of res without example links (the cells a
// --report - on stdout shows; writeMatrixReport adds the links).
func matrixData(res *matrix.Result) reports.MatrixData {
	data := reports.MatrixData{
		Note: fmt.Sprintf("%d random runs per cell; click a cell for its first violating run.", res.Seeds),
	}
	data.Algorithms = res.Algorithms
	for _, c := range res.Classes {
		data.FaultClasses = append(data.FaultClasses, string(c))
		data.Columns = append(data.Columns, reports.MatrixColumn{Name: string(c), Setup: faults.ClassSummary(c)})
	}
	for _, s := range res.Setups {
		data.Rows = append(data.Rows, reports.MatrixRow{Name: s.Algorithm, Setup: fmt.Sprintf("%s nodes %s · %d clients × %d cycles · TTL %s · token_check %s · %s per run",
			s.Backend, strings.Join(s.Nodes, ", "), s.Clients, s.Cycles, s.TTL, s.Fencing, s.Duration)})
	}
	for i := range res.Cells {
		if c := &res.Cells[i]; c.Applicable {
			data.Cells = append(data.Cells, matrixCell(c))
		}
	}
	return data
}

// parseAlgorithms reads --algorithms; empty means every registered one.
func parseAlgorithms(list string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(list, ",") {
		name := strings.TrimSpace(part)
		if name == "" {
			continue
		}
		if r, ok := scenarios.RetiredAlgorithm(strings.TrimSuffix(name, "+fencing")); ok {
			return nil, usagef("--algorithms: %s was the retired single-server ZooKeeper model; its replacement %s runs the real go-zookeeper client, which the matrix does not table (its faults are tabled by the go-zookeeper × fault test; run a scenario or locklab explore %s)", name, r, r)
		}
		if _, err := algorithms.Lookup(strings.TrimSuffix(name, "+fencing")); err != nil {
			return nil, usagef("--algorithms: unknown algorithm %q; expected a comma-separated list of %s", name, strings.Join(matrix.Rows(), ", "))
		}
		if !contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isTerminal reports whether w is a character device (a terminal), where a
// progress counter that rewrites its line makes sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// percent renders a share: "·" for none, "<1%" for a few, else whole
// percents.
func percent(n, of int) string {
	if n == 0 {
		return "·"
	}
	p := n * 100 / of
	if p == 0 {
		return "<1%"
	}
	return strconv.Itoa(p) + "%"
}

func printMatrix(w io.Writer, res *matrix.Result, files map[*matrix.Cell]string) {
	total := 0
	for _, c := range res.Cells {
		total += c.Runs
	}
	fmt.Fprintf(w, "locklab matrix — %d algorithms × %d fault classes × %d seeds (1..%d): %d runs\n",
		len(res.Algorithms), len(res.Classes), res.Seeds, res.Seeds, total)
	if res.Interrupted {
		fmt.Fprintf(w, "interrupted: the table covers the %d runs done\n", total)
	}

	nameWidth := len("ALGORITHM")
	for _, a := range res.Algorithms {
		nameWidth = max(nameWidth, len(a))
	}
	props := []struct {
		title string
		count func(c *matrix.Cell) int
	}{
		{"Mutual exclusion violated (two clients held the lock at once)", func(c *matrix.Cell) int { return c.Violated.MutualExclusion }},
		{"Resource violated (a lost update or a stale fencing token accepted)", func(c *matrix.Cell) int { return c.Violated.Resource }},
		{"Liveness violated (the lock stayed unavailable too long while nobody held it)", func(c *matrix.Cell) int { return c.Violated.Liveness }},
	}
	for _, p := range props {
		fmt.Fprintf(w, "\n%s\n", p.title)
		fmt.Fprintf(w, "  %-*s", nameWidth, "ALGORITHM")
		for _, cl := range res.Classes {
			fmt.Fprintf(w, "  %*s", max(len(cl), 4), strings.ToUpper(string(cl)))
		}
		fmt.Fprintln(w)
		for _, a := range res.Algorithms {
			fmt.Fprintf(w, "  %-*s", nameWidth, a)
			for _, cl := range res.Classes {
				c := res.Cell(a, cl)
				text := "n/a"
				switch {
				case c == nil || !c.Applicable:
				case c.Runs == 0:
					// An interrupted matrix never reached this cell:
					// nothing failed, nothing ran.
					text = "not run"
				case c.Checked() == 0:
					text = "err"
				default:
					text = percent(p.count(c), c.Checked())
				}
				fmt.Fprintf(w, "  %*s", max(len(cl), 4), text)
			}
			fmt.Fprintln(w)
		}
	}

	printMatrixNotes(w, res)

	fmt.Fprintf(w, "\nLegend: each cell is the share of the %d runs of an algorithm under random faults of one class\n", res.Seeds)
	fmt.Fprintln(w, "that violated the property; · none did; n/a the class has nothing to act on for that algorithm;")
	if res.Interrupted {
		fmt.Fprintln(w, "not run: the matrix was interrupted before the cell's first run;")
	}
	fmt.Fprintf(w, "err every run failed to run (see Notes). Classes (lengths are multiples of the TTL, %v):\n", matrix.TTL)
	for _, cl := range res.Classes {
		fmt.Fprintf(w, "  %-10s %s\n", cl, faults.ClassSummary(cl))
	}
	if len(res.Setups) > 0 {
		s := res.Setups[0]
		fmt.Fprintf(w, "Setup: %d clients × %d lock cycles, work %s, TTL %v, %v simulated, faults within the first %v;\n",
			s.Clients, s.Cycles, s.Work, s.TTL, s.Duration, s.Horizon)
	}
	var fenced []string
	for _, s := range res.Setups {
		if s.Fencing != "none" {
			fenced = append(fenced, s.Algorithm)
		}
	}
	if len(fenced) > 0 {
		fmt.Fprintf(w, "quorum algorithms run on 5 Redis nodes A..E; the resource checks fencing tokens for %s.\n", strings.Join(fenced, ", "))
	} else {
		fmt.Fprintln(w, "quorum algorithms run on 5 Redis nodes A..E; no algorithm here issues fencing tokens.")
	}

	if len(files) > 0 {
		fmt.Fprintln(w, "\nFirst violating run of each cell, as a scenario file:")
		for i := range res.Cells {
			c := &res.Cells[i]
			if f, ok := files[c]; ok {
				fmt.Fprintf(w, "  locklab run %s\n", f)
			}
		}
	} else {
		fmt.Fprintln(w, "\nThe first violating run of each cell is in --json (seed and schedule); --examples DIR writes each")
		fmt.Fprintln(w, "as a scenario file that 'locklab run' replays.")
	}
}

// printMatrixNotes names the cells with runs that failed to run or that
// the checker could not decide.
func printMatrixNotes(w io.Writer, res *matrix.Result) {
	var notes []string
	for i := range res.Cells {
		c := &res.Cells[i]
		if c.Errors > 0 {
			notes = append(notes, fmt.Sprintf("%s × %s: %d of %d runs failed to run and are not counted (%s)", c.Algorithm, c.Class, c.Errors, c.Runs, c.FirstError))
		}
		u := c.Unknown
		if n := max(u.MutualExclusion, u.Resource, u.Liveness); n > 0 {
			notes = append(notes, fmt.Sprintf("%s × %s: the checker could not decide %d run(s) (unknown: mutual exclusion %d, resource %d, liveness %d); they count as not violated",
				c.Algorithm, c.Class, n, u.MutualExclusion, u.Resource, u.Liveness))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}
