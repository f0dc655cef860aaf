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
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/reports"
	"github.com/locklab/locklab/scenarios"
)

const exploreUsage = `Usage: locklab explore ALGORITHM [--faults CLASSES] [--runs N | --time D]
                        [--seed S] [--workers K] [--all] [--out FILE]
                        [--report FILE] [--json]

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
  --out FILE        where to save the counterexample
                    (default locklab-counterexample-ALGORITHM-SEED.yaml)
  --report FILE     where to write the counterexample's HTML report
                    (default: beside the scenario file, with .html)
  --json            print one JSON object instead of text

Exit status: 1 when a violation was found, 0 when none was, 2 on bad input.
A progress line is shown on a terminal; in CI the output is plain lines.
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

func runExplore(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("explore", exploreHelp(), stdout)
	faultsText := fs.String("faults", "all", "")
	runsText := fs.String("runs", "", "")
	timeText := fs.String("time", "", "")
	seedText := fs.String("seed", "1", "")
	workersText := fs.String("workers", "", "")
	all := fs.Bool("all", false, "")
	outPath := fs.String("out", "", "")
	reportPath := fs.String("report", "", "")
	asJSON := fs.Bool("json", false, "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("explore needs exactly one algorithm (one of %s), got %d arguments", strings.Join(algorithms.Names(), ", "), len(pos))
	}
	alg := pos[0]
	if _, err := algorithms.Lookup(alg); err != nil {
		return usagef("unknown algorithm %q; expected one of %s", alg, strings.Join(algorithms.Names(), ", "))
	}
	classes, err := faults.ParseClasses(*faultsText)
	if err != nil {
		return usagef("--faults: %v", err)
	}
	opt := scenarios.ExploreOptions{Algorithm: alg, Classes: classes, All: *all}
	if opt.Seed, err = strconv.ParseUint(*seedText, 10, 64); err != nil {
		return usagef("--seed: expected a non-negative integer, got %q", *seedText)
	}
	if *runsText != "" {
		if opt.Runs, err = strconv.Atoi(*runsText); err != nil || opt.Runs < 1 {
			return usagef("--runs: expected a number of runs >= 1, got %q", *runsText)
		}
	}
	if *timeText != "" {
		d, err := time.ParseDuration(*timeText)
		if err != nil || d <= 0 {
			return usagef("--time: expected a duration such as 30s or 2m, got %q", *timeText)
		}
		opt.Time = d
	}
	if *workersText != "" {
		if opt.Workers, err = strconv.Atoi(*workersText); err != nil || opt.Workers < 1 {
			return usagef("--workers: expected a number of parallel runs >= 1, got %q", *workersText)
		}
	}
	out := *outPath
	if out == "" {
		out = fmt.Sprintf("locklab-counterexample-%s-%d.yaml", alg, opt.Seed)
	}
	if *reportPath == "" {
		*reportPath = strings.TrimSuffix(out, filepath.Ext(out)) + ".html"
	}

	progress := isTerminal(stderr) && !*asJSON
	var mu sync.Mutex
	if progress {
		start := time.Now()
		opt.Progress = func(runs, found int) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "\rexplore %s: %d runs, %d violating (%.1fs)", alg, runs, found, time.Since(start).Seconds())
		}
	}
	res, err := scenarios.Explore(opt)
	if progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}

	report := exploreOutput{Algorithm: alg, Seed: opt.Seed, Runs: res.Runs, Found: len(res.Findings) > 0, Violations: []exploreViolation{}}
	for _, c := range classes {
		report.Faults = append(report.Faults, string(c))
	}
	for _, f := range res.Findings {
		report.Violations = append(report.Violations, exploreViolation{Run: f.Run, Seed: f.Scenario.Seed, Property: f.Property, Faults: f.Scenario.Faults, Clients: f.Scenario.Clients.Count})
	}
	var first *scenarios.Finding
	if len(res.Findings) > 0 && res.Findings[0].Minimal != nil {
		first = &res.Findings[0]
		min := first.Minimal
		min.ID = strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
		data, err := min.Marshal()
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return fmt.Errorf("cannot save the counterexample: %w", err)
		}
		report.Counterexample = &counterexampleOutput{
			Property:    first.Property,
			Faults:      min.Faults,
			Clients:     min.Clients.Count,
			Seed:        min.Seed,
			File:        out,
			Replay:      "locklab replay " + out,
			TraceSHA256: first.MinimalResult.TraceSHA256,
			Witness:     witnessText(first.MinimalResult.Report),
			ShrinkRuns:  first.ShrinkRuns,
		}
		if *reportPath != "" {
			if err := reports.WriteRunFile(*reportPath, first.MinimalResult, nil, report.Counterexample.Replay); err != nil {
				return err
			}
		}
	}

	if *asJSON {
		if err := writeJSON(stdout, report); err != nil {
			return err
		}
	} else {
		printExplore(stdout, alg, opt, res, report, *reportPath)
	}
	if report.Found {
		return &exitError{1}
	}
	return nil
}

func printExplore(w io.Writer, alg string, opt scenarios.ExploreOptions, res *scenarios.ExploreResult, out exploreOutput, reportPath string) {
	fmt.Fprintf(w, "explore %s — faults %s, seed %d\n", alg, strings.Join(out.Faults, ","), opt.Seed)
	if !out.Found {
		fmt.Fprintf(w, "no violation in %d runs (%.1fs)\n", res.Runs, res.Elapsed.Seconds())
		return
	}
	f := res.Findings[0]
	fmt.Fprintf(w, "found: %s violated in run %d after %d runs (%.2fs)\n", strings.ReplaceAll(f.Property, "_", " "), f.Run, res.Runs, res.FoundAfter.Seconds())
	for _, v := range out.Violations[1:] {
		fmt.Fprintf(w, "also: run %d violated %s\n", v.Run, strings.ReplaceAll(v.Property, "_", " "))
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
	fmt.Fprintf(w, "\nSaved: %s\nReplay: %s   (trace sha256 %s)\n", c.File, c.Replay, c.TraceSHA256)
	if reportPath != "" {
		fmt.Fprintf(w, "Report: %s\n", reportPath)
	}
}

const replayUsage = `Usage: locklab replay FILE [--seed N] [--json] [--trace] [--report FILE]

Runs a saved scenario file — typically a counterexample written by 'locklab
explore' — with the seed stored in it, and prints the verdict, the witness
and the SHA-256 of the full event trace. The same file and seed always give
the same trace, byte for byte. It is 'locklab run FILE' under the name you
reach for when reproducing a failure.

Exit status: 0 when the run reproduces the file's expectation, 1 when it
does not, 2 on bad input.
`

func runReplay(args []string, stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Fprint(stdout, replayUsage)
			return nil
		}
	}
	return runRun(args, stdout, stderr)
}
