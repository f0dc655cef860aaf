package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/reports"
	"github.com/locklab/locklab/scenarios"
)

const exploreUsage = `Usage: locklab explore ALGORITHM [--faults CLASSES] [--runs N | --time D]
                        [--seed S] [--workers K] [--all] [--out FILE]
                        [--report FILE] [--json] [--shard I/N]
                        [--hunt PROPERTIES]

Draws random fault schedules and workloads against ALGORITHM, swarm style
(which fault classes are on, and the workload, are drawn per run), runs them
in parallel, and stops at the first run that violates mutual exclusion,
resource safety or liveness. It then shrinks that run to a minimal
counterexample — fewer and smaller faults, fewer clients — prints it with the
witness and a replay command, and saves it as a scenario file.

Every run is deterministic: the same --seed explores the same runs and finds
the same counterexample whatever --workers is (only --time makes the number
of runs depend on the machine).

Flags:
  --faults CLASSES  comma-separated fault classes (default all):
                    %s
  --runs N          at most N runs (default 1000 when --time is not given)
  --time D          stop after this much wall time (for example 30s)
  --seed S          which runs to draw (default 1)
  --workers K       parallel runs (default: the number of CPUs)
  --all             go on after the first violation and list every
                    violating run; the first is shrunk
  --out FILE        where to save the counterexample; .yaml is appended
                    unless FILE ends in .yaml or .yml; a directory
                    or - is refused (a counterexample is a file)
                    (default locklab-counterexample-ALGORITHM-SEED.yaml,
                    or -2, -3, ... added when that name is taken)
  --report FILE     where to write the counterexample's HTML report
                    (default: the counterexample's name with .html;
                    "-": stdout, the summary then goes to stderr)
  --force           replace existing files named by --out or --report
                    (--out and --report may never name the same file,
                    compared by the file, through symlinks)
  --max-runs N      the largest --runs accepted (default 10000000)
  --json            print one JSON object instead of text
  --hunt PROPS      stop at, shrink and save only a run that violates one
                    of these properties (comma-separated: mutual_exclusion,
                    resource, liveness; default all): a lock known to
                    strand waiters can be hunted for an overlap. Runs
                    that break only other properties are counted and
                    named with the command that finds them, never dropped
  --shard I/N       run only the runs whose index is I modulo N (the runs
                    I, I+N, I+2N, ... up to --runs): N machines each
                    running one shard run the whole sweep between them;
                    join their --all --json outputs with 'locklab merge'

Exit status: 1 when a violation was found (with --hunt, also when the only
violations were of properties it leaves out), 0 when none was, 2 on bad input
(an --out or --report that is a device, a pipe, a directory or in a missing
directory is refused before any run, --force or not), 3 when the summary
was printed but the counterexample or its report could not be written (its
replay is then the explore command that finds it again), 130/143 when SIGINT/SIGTERM stopped it: the runs in flight finish,
shrinking keeps the smallest counterexample so far, the summary (runs done,
violations found, replay command) is printed and the counterexample saved.
A second signal quits at once. A progress line is shown on a terminal; in CI
the output is plain lines.
`

func exploreHelp() string {
	var names []string
	for _, c := range faults.Classes() {
		names = append(names, string(c))
	}
	return fmt.Sprintf(exploreUsage, strings.Join(names, ","))
}

// exploreOutput is the JSON shape of 'locklab explore --json'.
type exploreOutput struct {
	Algorithm string   `json:"algorithm"`
	Seed      uint64   `json:"seed"`
	Faults    []string `json:"faults"`
	Runs      int      `json:"runs"`
	Found     bool     `json:"found"`
	// Violations lists every violating run found (one unless --all).
	Violations []exploreViolation `json:"violations"`
	// Counterexample is the shrunk first violation.
	Counterexample *counterexampleOutput `json:"counterexample,omitempty"`
	// Interrupted is set when SIGINT or SIGTERM stopped the exploration.
	Interrupted bool `json:"interrupted,omitempty"`
	// MoreViolations counts violating runs beyond the ones listed.
	MoreViolations int `json:"more_violations,omitempty"`
	// Shard is set when --shard ran a part of the sweep.
	Shard *shardOutput `json:"shard,omitempty"`
	// Hunt is --hunt: the properties a finding had to violate.
	Hunt []string `json:"hunt,omitempty"`
	// Unhunted is set when runs broke only properties --hunt leaves out.
	Unhunted *unhuntedOutput `json:"unhunted,omitempty"`
}

// shardOutput names the part of a sweep one --shard run covered, so that
// 'locklab merge' can check that the parts join into the whole sweep.
type shardOutput struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// RunBound is --runs: the highest run index of the sweep (0 under
	// --time, whose sweeps depend on the machine and are not checked).
	RunBound int `json:"run_bound"`
	// All is --all: only shards that went on after their first violation
	// give the sweep's every violating run when joined.
	All bool `json:"all"`
}

type exploreViolation struct {
	Run      int             `json:"run"`
	Seed     uint64          `json:"seed"`
	Property string          `json:"property"`
	Faults   faults.Schedule `json:"faults"`
	Clients  int             `json:"clients"`
}

type counterexampleOutput struct {
	Property    string          `json:"property"`
	Faults      faults.Schedule `json:"faults"`
	Clients     int             `json:"clients"`
	Seed        uint64          `json:"seed"`
	File        string          `json:"file"`
	Replay      string          `json:"replay"`
	TraceSHA256 string          `json:"trace_sha256"`
	Witness     []string        `json:"witness"`
	ShrinkRuns  int             `json:"shrink_runs"`
}

// maxExploreWorkers bounds --workers: more goroutines than this only cost
// memory on any machine locklab runs on.
const maxExploreWorkers = 1024

// exploreMaxRuns is the default bound of --runs (raise it with --max-runs).
const exploreMaxRuns = 10_000_000

func runExplore(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("explore", exploreHelp(), stdout)
	faultsText := fs.String("faults", "all", "")
	runsText := fs.String("runs", "", "")
	maxRunsText := fs.String("max-runs", strconv.Itoa(exploreMaxRuns), "")
	timeText := fs.String("time", "", "")
	seedText := fs.String("seed", "1", "")
	workersText := fs.String("workers", "", "")
	all := fs.Bool("all", false, "")
	outPath := fs.String("out", "", "")
	reportPath := fs.String("report", "", "")
	asJSON := fs.Bool("json", false, "")
	force := fs.Bool("force", false, "")
	shardText := fs.String("shard", "", "")
	huntText := fs.String("hunt", "", "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("explore needs exactly one algorithm (one of %s), got %d arguments", strings.Join(algorithms.Names(), ", "), len(pos))
	}
	alg := pos[0]
	if err := checkExploreAlgorithm(alg); err != nil {
		return err
	}
	classes, err := faults.ParseClasses(*faultsText)
	if err != nil {
		return usagef("--faults: %v", err)
	}
	opt := explore.Options{Algorithm: alg, Classes: classes, All: *all}
	if err := parseExploreRuns(&opt, *seedText, *maxRunsText, *runsText, *timeText, *workersText, *shardText); err != nil {
		return err
	}
	if opt.Hunt, err = parseHunt(*huntText); err != nil {
		return err
	}
	out, report, err := explorePaths(*outPath, *reportPath, alg, opt.Seed, *force)
	if err != nil {
		return err
	}
	// explorePaths settled which names may be replaced; a device, a pipe
	// or a missing directory is refused whatever --force says.
	if err := checkOutputs(nil, []outputFlag{{"--out", out}, {"--report", report}}, true); err != nil {
		return err
	}
	textOut := stdout
	if report == "-" {
		if *asJSON {
			return usagef("--report - and --json both want stdout; write the report to a file")
		}
		textOut = stderr
	}

	res, signalled, err := exploreShowingProgress(stderr, alg, &opt, isTerminal(stderr) && !*asJSON)
	if err != nil {
		return err
	}

	summary := exploreSummary(alg, opt, classes, res)
	summary.Unhunted = unhuntedSummary(alg, opt, *faultsText, res)
	var writeErr error
	if len(res.Findings) > 0 && res.Findings[0].Minimal != nil {
		if writeErr, err = saveCounterexample(stdout, stderr, alg, opt, *faultsText, &res.Findings[0], out, report, &summary); err != nil {
			return err
		}
	}
	if writeErr != nil && report != "-" {
		report = ""
	}

	if *asJSON {
		if err := writeJSON(stdout, summary); err != nil {
			return err
		}
	} else {
		printExplore(textOut, alg, opt, res, summary, report)
	}
	if writeErr != nil {
		printErrorLines(stderr, writeErr.Error()+" (the finding above stands; exit status 3: an output was not written)")
		return &exitError{exitWriteFailed}
	}
	if signalled != 0 {
		return &exitError{signalled}
	}
	if summary.Found || summary.Unhunted != nil {
		return &exitError{1}
	}
	return nil
}

// exploreShowingProgress runs the exploration, stopped by an interrupt,
// with a progress line on a terminal's stderr; signalled is the signal
// that stopped it (0: none).
func exploreShowingProgress(stderr io.Writer, alg string, opt *explore.Options, progress bool) (res *explore.Result, signalled int, err error) {
	var mu sync.Mutex
	if progress {
		start := time.Now()
		opt.Progress = func(runs, found int) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "\rexplore %s: %d runs, %d violating (%.1fs)", alg, runs, found, time.Since(start).Seconds())
		}
	}
	in := onInterrupt(stderr, "explore")
	opt.Context = in.ctx
	res, err = explore.Explore(*opt)
	signalled = in.stop()
	if progress {
		mu.Lock()
		fmt.Fprint(stderr, "\r\033[K")
		mu.Unlock()
	}
	return res, signalled, err
}

// checkExploreAlgorithm refuses a retired or unknown algorithm, with what
// to write instead.
func checkExploreAlgorithm(alg string) error {
	if r, ok := scenarios.RetiredAlgorithm(alg); ok {
		return usagef("%s was the retired single-server ZooKeeper model; explore %s, the same recipe on the real go-zookeeper client", alg, r)
	}
	if _, err := algorithms.Lookup(alg); err != nil {
		msg := fmt.Sprintf("unknown algorithm %q; expected one of %s", term(alg, false), strings.Join(algorithms.Names(), ", "))
		if d := scenarios.DidYouMean(alg, algorithms.Names()); d != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", d)
		}
		return usagef("%s", msg)
	}
	return nil
}

// parseExploreRuns reads --seed, --runs (bounded by --max-runs), --time,
// --workers and --shard into opt.
func parseExploreRuns(opt *explore.Options, seedText, maxRunsText, runsText, timeText, workersText, shardText string) error {
	var err error
	if opt.Seed, err = strconv.ParseUint(seedText, 10, 64); err != nil {
		return usagef("--seed: expected a non-negative integer, got %q", seedText)
	}
	maxRuns, err := parseCount("--max-runs", maxRunsText, 1, 1<<62)
	if err != nil {
		return err
	}
	if runsText != "" {
		n, err := strconv.ParseInt(runsText, 10, 64)
		if err != nil || n < 1 {
			return usagef("--runs: expected a number of runs >= 1, got %q", runsText)
		}
		if n > maxRuns {
			return usagef("--runs: expected at most %d runs (the limit; raise it with --max-runs), found %d", maxRuns, n)
		}
		opt.Runs = int(n)
	}
	if timeText != "" {
		d, err := time.ParseDuration(timeText)
		if err != nil || d <= 0 {
			return usagef("--time: expected a duration such as 30s or 2m, got %q", timeText)
		}
		opt.Time = d
		if opt.Runs == 0 {
			opt.Runs = int(maxRuns)
		}
	}
	if workersText != "" {
		n, err := parseCount("--workers", workersText, 1, maxExploreWorkers)
		if err != nil {
			return err
		}
		opt.Workers = int(n)
	}
	if shardText != "" {
		if opt.Shard, opt.Shards, err = parseShard(shardText); err != nil {
			return err
		}
	}
	return nil
}

// exploreSummary is the --json summary of an exploration, before its
// counterexample is saved.
func exploreSummary(alg string, opt explore.Options, classes []faults.Class, res *explore.Result) exploreOutput {
	summary := exploreOutput{Algorithm: alg, Seed: opt.Seed, Runs: res.Runs, Found: len(res.Findings) > 0, Violations: []exploreViolation{}, Interrupted: res.Interrupted, MoreViolations: res.MoreFindings, Hunt: opt.Hunt}
	if opt.Shards > 0 {
		bound := opt.Runs
		if opt.Time > 0 {
			bound = 0
		}
		summary.Shard = &shardOutput{Index: opt.Shard, Count: opt.Shards, RunBound: bound, All: opt.All}
	}
	for _, c := range classes {
		summary.Faults = append(summary.Faults, string(c))
	}
	for _, f := range res.Findings {
		summary.Violations = append(summary.Violations, exploreViolation{Run: f.Run, Seed: f.Scenario.Seed, Property: f.Property, Faults: f.Scenario.Faults, Clients: f.Scenario.Clients.Count})
	}
	return summary
}

// saveCounterexample seals the first finding's shrunk scenario, prints it,
// and writes it to out (and its report to report): a write that fails is
// writeErr, and the summary then gives the command that finds it again;
// err is a failure to seal or marshal.
func saveCounterexample(stdout, stderr io.Writer, alg string, opt explore.Options, faultsText string, first *explore.Finding, out, report string, summary *exploreOutput) (writeErr, err error) {
	min := first.Minimal
	min.ID = strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
	if err := min.Seal(first.MinimalResult.TraceSHA256, first.Property); err != nil {
		return nil, err
	}
	data, err := min.Marshal()
	if err != nil {
		return nil, err
	}
	// The finding is printed before any file is written, so a write
	// that fails (a full disk, --force onto a directory, a kill) loses
	// neither the seed nor the witness nor the way to find it again.
	printFinding(stderr, alg, opt, faultsText, first, min)
	summary.Counterexample = &counterexampleOutput{
		Property:    first.Property,
		Faults:      min.Faults,
		Clients:     min.Clients.Count,
		Seed:        min.Seed,
		File:        out,
		Replay:      "locklab replay " + shellWord(out),
		TraceSHA256: first.MinimalResult.TraceSHA256,
		Witness:     witnessText(first.MinimalResult.Report),
		ShrinkRuns:  first.ShrinkRuns,
	}
	header := fmt.Sprintf("# A counterexample found by 'locklab explore %s --seed %d%s'.\n# Replay it: locklab replay %s\n# The counterexample block is checked on replay; do not edit the file.\n", alg, opt.Seed, huntFlag(opt), shellWord(out))
	if err := writeFileAtomic(out, append([]byte(header), data...)); err != nil {
		// The summary is still printed, without a file to replay:
		// its replay command finds the counterexample again.
		writeErr = fmt.Errorf("cannot save the counterexample: %w", err)
		summary.Counterexample.File = ""
		summary.Counterexample.Replay = findAgain(alg, opt, faultsText, first)
	} else if report == "-" {
		if err := reports.WriteRun(stdout, first.MinimalResult, nil, summary.Counterexample.Replay); err != nil {
			return nil, err
		}
	} else if report != "" {
		writeErr = reports.WriteRunFile(report, first.MinimalResult, nil, summary.Counterexample.Replay)
	}

	return writeErr, nil
}

// explorePaths picks the counterexample's and the report's file names.
// The naming rule: --out gets .yaml appended unless it ends in .yaml or
// .yml (so 'locklab replay FILE' reads it as a file); the report defaults
// to the same name with .html; the two may never be the same file. An
// existing file named by a flag is replaced only with --force; when the
// default names are taken, -2, -3, ... is added before the extension.
func explorePaths(out, report, alg string, seed uint64, force bool) (string, string, error) {
	explicitOut := out != ""
	// A directory or "-" is refused before .yaml is appended, so that
	// --out adir/ does not write adir/.yaml and --out - no file named
	// -.yaml (the counterexample is a file to replay, never stdout).
	if explicitOut && (out == "-" || strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(os.PathSeparator)) || isDir(out)) {
		return "", "", usagef("--out: expected a file name such as cx.yaml, found %q (a directory or -; the counterexample is a file to replay)", term(out, false))
	}
	if !explicitOut {
		out = fmt.Sprintf("locklab-counterexample-%s-%d.yaml", alg, seed)
	} else if ext := strings.ToLower(filepath.Ext(out)); ext != ".yaml" && ext != ".yml" {
		out += ".yaml"
	}
	if isDir(out) {
		return "", "", usagef("--out: %s is a directory; expected a file name such as cx.yaml", term(out, false))
	}
	explicitReport := report != ""
	htmlOf := func(p string) string { return strings.TrimSuffix(p, filepath.Ext(p)) + ".html" }
	if !explicitReport {
		report = htmlOf(out)
	}
	if report != "-" && isDir(report) {
		return "", "", usagef("--report: %s is a directory; expected a file name such as cx.html, or - for stdout", term(report, false))
	}
	if report != "-" && sameFile(report, out) {
		return "", "", usagef("--report and --out name the same file %s; the report would overwrite the counterexample", term(out, false))
	}
	if !explicitOut && !force {
		stem := strings.TrimSuffix(out, ".yaml")
		for n := 2; exists(out) || (!explicitReport && exists(report)); n++ {
			out = fmt.Sprintf("%s-%d.yaml", stem, n)
			if !explicitReport {
				report = htmlOf(out)
			}
		}
	}
	if !force {
		if explicitOut && exists(out) {
			return "", "", usagef("--out: %s exists; pass --force to replace it, or name another file", term(out, false))
		}
		if report != "-" && exists(report) {
			return "", "", usagef("--report: %s exists; pass --force to replace it, or name another file", term(report, false))
		}
	}
	return out, report, nil
}

// printFinding is the finding in a few lines, on stderr, before the files
// are written: the property, the seed, the witness, and the command that
// finds it again (the explore run is a function of its flags).
func printFinding(w io.Writer, alg string, opt explore.Options, faultsText string, f *explore.Finding, min *scenarios.Scenario) {
	again := findAgain(alg, opt, faultsText, f)
	fmt.Fprintf(w, "locklab: found %s violated in run %d (counterexample seed %d); find it again with: %s\n", strings.ReplaceAll(f.Property, "_", " "), f.Run, min.Seed, term(again, false))
	for _, line := range witnessText(f.MinimalResult.Report) {
		fmt.Fprintf(w, "locklab:   witness: %s\n", term(line, false))
	}
}

// findAgain is the explore command that finds f again (the explore run
// is a function of its flags).
func findAgain(alg string, opt explore.Options, faultsText string, f *explore.Finding) string {
	again := fmt.Sprintf("locklab explore %s --seed %d --runs %d", alg, opt.Seed, f.Run+1)
	if faultsText != "all" {
		again += " --faults " + shellWord(faultsText)
	}
	if opt.Shards > 0 {
		again += fmt.Sprintf(" --shard %d/%d", opt.Shard, opt.Shards)
	}
	return again + huntFlag(opt)
}

func printExplore(w io.Writer, alg string, opt explore.Options, res *explore.Result, out exploreOutput, reportPath string) {
	fmt.Fprintf(w, "explore %s — faults %s, seed %d", alg, strings.Join(out.Faults, ","), opt.Seed)
	if opt.Shards > 0 {
		fmt.Fprintf(w, ", shard %d/%d", opt.Shard, opt.Shards)
	}
	fmt.Fprintln(w)
	if out.Interrupted {
		fmt.Fprintf(w, "interrupted after %d runs; %d violating run(s) found so far\n", res.Runs, len(out.Violations)+out.MoreViolations)
	}
	if !out.Found {
		if len(opt.Hunt) > 0 {
			fmt.Fprintf(w, "no %s violation in %d runs (%.1fs)\n", strings.ReplaceAll(strings.Join(opt.Hunt, " or "), "_", " "), res.Runs, res.Elapsed.Seconds())
		} else {
			fmt.Fprintf(w, "no violation in %d runs (%.1fs)\n", res.Runs, res.Elapsed.Seconds())
		}
		printUnhunted(w, out.Unhunted)
		return
	}
	printUnhunted(w, out.Unhunted)
	f := res.Findings[0]
	fmt.Fprintf(w, "found: %s violated in run %d after %d runs (%.2fs)\n", strings.ReplaceAll(f.Property, "_", " "), f.Run, res.Runs, res.FoundAfter.Seconds())
	for _, v := range out.Violations[1:] {
		fmt.Fprintf(w, "also: run %d violated %s\n", v.Run, strings.ReplaceAll(v.Property, "_", " "))
	}
	if out.MoreViolations > 0 {
		fmt.Fprintf(w, "and %d more violating runs (not listed)\n", out.MoreViolations)
	}
	c := out.Counterexample
	if c == nil {
		fmt.Fprintln(w, "(the violation did not reproduce when shrinking; run it with --all to see the schedule)")
		return
	}
	fmt.Fprintf(w, "shrunk from %d faults and %d clients to %d fault(s) and %d client(s) in %d runs (%.2fs)\n\n",
		len(f.Scenario.Faults), f.Scenario.Clients.Count, len(c.Faults), c.Clients, c.ShrinkRuns, f.ShrinkTime.Seconds())
	fmt.Fprintln(w, "Minimal schedule:")
	if len(c.Faults) == 0 {
		fmt.Fprintln(w, "  (no faults: the workload alone breaks the lock)")
	}
	for _, fl := range c.Faults {
		fmt.Fprintf(w, "  %s\n", fl.String())
	}
	fmt.Fprintln(w, "\nWitness:")
	for _, t := range c.Witness {
		fmt.Fprintf(w, "  %s\n", t)
	}
	if c.File == "" {
		fmt.Fprintf(w, "\nNot saved (see the error below); find it again: %s   (trace sha256 %s)\n", term(c.Replay, false), c.TraceSHA256)
	} else {
		fmt.Fprintf(w, "\nSaved: %s\nReplay: %s   (trace sha256 %s)\n", term(c.File, false), term(c.Replay, false), c.TraceSHA256)
	}
	if reportPath != "" && reportPath != "-" {
		fmt.Fprintf(w, "Report: %s\n", term(reportPath, false))
	}
}

const replayUsage = `Usage: locklab replay FILE [--json] [--trace] [--report FILE] [--events FILE] [--force]

Runs a saved scenario file — typically a counterexample written by 'locklab
explore' — with the seed stored in it, and prints the verdict, the witness
and the SHA-256 of the full event trace. The same file and seed always give
the same trace, byte for byte. It is 'locklab run FILE' under the name you
reach for when reproducing a failure.

A counterexample file carries a block with its format version, seed,
expectation, trace digest and a digest of the scenario. Replay checks them
and says exactly what differs: a file cut short or edited is refused (exit
2), and a run whose trace digest differs from the file's does not reproduce
it (exit 1). Takes the flags and limits of 'locklab run' but --seed: the
file carries its seed, and another seed is a different run, not a replay
(refused, exit 2; 'locklab run FILE --seed N' runs it, labelled as a
different run).

Exit status: 0 when the run reproduces the file's expectation (and its
trace digest), 1 when it does not, 2 on bad input, 3 when an output file
could not be written (the outcome is printed first).
`

func runReplay(args []string, stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Fprint(stdout, replayUsage)
			return nil
		}
	}
	return runScenario(args, stdout, stderr, true)
}
