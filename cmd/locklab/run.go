package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/reports"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

const listUsage = `Usage: locklab list [--json]

Lists the built-in scenarios: id, algorithm and a one-line title. Every id can
be run with 'locklab run ID'.

Flags:
  --json   print a JSON array of {id, algorithm, title, twin, expected}
`

func runList(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("list", listUsage, stdout)
	asJSON := fs.Bool("json", false, "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("list takes no arguments, got %q", pos[0])
	}
	all, err := scenarios.Catalogue()
	if err != nil {
		return err
	}
	if *asJSON {
		type row struct {
			ID        string           `json:"id"`
			Algorithm string           `json:"algorithm"`
			Title     string           `json:"title"`
			Twin      string           `json:"twin,omitempty"`
			Expected  scenarios.Expect `json:"expected"`
		}
		var rows []row
		for _, s := range all {
			rows = append(rows, row{s.ID, s.Algorithm, s.Title, s.Twin, s.Expect})
		}
		return writeJSON(stdout, rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tALGORITHM\tTITLE")
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.ID, algorithmLabel(s), s.Title)
	}
	return tw.Flush()
}

const runUsage = `Usage: locklab run SCENARIO [--seed N] [--json] [--trace] [--report FILE] [--events FILE]

Runs a scenario — a built-in id from 'locklab list' or a path to a scenario
file (see 'locklab help scenario') — checks mutual exclusion, resource safety
and liveness, and compares the verdict with the scenario's expectation.

Flags:
  --live     run it against real servers in real time instead: the same as
             'locklab live SCENARIO' (its flags: --runs, --timeout, --json)
  --seed N   seed of the run (default: the scenario's own seed); the same seed
             gives a byte-identical trace
  --json     print one JSON object (scenario, seed, verdict, expected,
             matches_expectation, witness, trace_sha256, faults, metrics, replay)
  --trace    also print the full event trace (human output only)
  --report FILE
             write a self-contained HTML report of the run to FILE ("-":
             stdout, the summary then goes to stderr); an existing FILE is
             replaced only with --force
  --events FILE
             write the run's typed events to FILE as JSON Lines, one object
             per line with at_ns, actor, kind and the kind's fields ("-":
             stdout); the trace digest is the same with or without it; an
             existing FILE is replaced only with --force
  --force    replace an existing report or events file (never a device, a
             pipe, a directory or the scenario file itself: those are
             refused, exit 2, before the run)
  --max-report-bytes N
             the trace a report may keep in memory to draw the run
             (default 50331648, 48 MiB; memory grows about 4x with it): a
             longer run prints its verdict and exits 3 without a report
             (--events and --trace stream to disk and have no such bound)

` + limitsHelp + `
A scenario file written by 'locklab explore' carries a counterexample
block (format, seed, expectation, trace digest, scenario digest): a file
that disagrees with its block is refused (exit 2), and a run whose trace
digest differs from the recorded one does not match (exit 1).

Scenarios on the real go-zookeeper client (algorithms gozk-*) run the
unmodified library inside a testing/synctest bubble that locklab hosts
itself (package sim/bubblehost): the library's goroutines, timers and
time.Now follow virtual time, so the same seed still gives the same bytes.
Bubbles of parallel runs (explore --workers) run side by side. A panic or a deadlock inside a bubble is an
error on stderr (exit 2); stdout stays clean.

A run that uses its work budget (--max-work), or whose simulated time
stops (a retry loop with no delay and no latency), is cut short there and
judged on its history up to the cut: a "Stopped:" line before the verdict
says where and why (--json: "stopped"), and the exit status is the
verdict's.

Exit status: 0 when the verdict matches the expectation, 1 when it does not,
2 on bad input (unknown scenario, invalid file, bad flag, a limit exceeded,
an output path that is not a new or regular file or is an input), 3 when
the run finished and its outcome was printed but --report or --events
could not be written (the error names which).
Faults that can never fire, or fired and changed nothing, are warned about
on stderr (and listed in --json as "warnings").
`

// runOutput is the JSON shape of 'locklab run --json'.
type runOutput struct {
	Scenario           string                 `json:"scenario"`
	Title              string                 `json:"title"`
	Algorithm          string                 `json:"algorithm"`
	Seed               uint64                 `json:"seed"`
	Verdict            checker.Verdict        `json:"verdict"`
	Expected           map[string]string      `json:"expected"`
	MatchesExpectation bool                   `json:"matches_expectation"`
	Witness            witnessOutput          `json:"witness"`
	TraceSHA256        string                 `json:"trace_sha256"`
	TraceEvents        int                    `json:"trace_events"`
	Faults             []faultOutput          `json:"faults"`
	Metrics            map[string]interface{} `json:"metrics"`
	SimulatedSeconds   float64                `json:"simulated_seconds"`
	// Stopped is set when a limit cut the run short: the verdict covers
	// the history up to stopped.at_ns (see runner.Stop).
	Stopped  *runner.Stop        `json:"stopped,omitempty"`
	Work     int64               `json:"work"`
	Compared []runner.Comparison `json:"compared,omitempty"`
	Replay   string              `json:"replay"`
	// Warnings name faults that can never fire or changed nothing.
	Warnings []string `json:"warnings"`
	// Mismatch says how a counterexample's replay differs from its file.
	Mismatch string `json:"mismatch,omitempty"`
	// DifferentRun says that a counterexample ran with another seed than
	// its own: a different run, not its replay.
	DifferentRun string `json:"different_run,omitempty"`
}

type witnessOutput struct {
	MutualExclusion *checker.Overlap         `json:"mutual_exclusion,omitempty"`
	Resource        *checker.ResourceWitness `json:"resource,omitempty"`
	Liveness        *checker.Unavailable     `json:"liveness,omitempty"`
	Text            []string                 `json:"text"`
}

type faultOutput struct {
	At    float64      `json:"at_s"`
	Until float64      `json:"until_s,omitempty"`
	Text  string       `json:"text"`
	Fault faults.Fault `json:"fault"`
}

func runRun(args []string, stdout, stderr io.Writer) error {
	// run --live is 'locklab live' (live.go): the same file against real
	// servers, in real time.
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "--live" || a == "-live" {
			return runLive(append(append([]string{}, args[:i]...), args[i+1:]...), stdout, stderr)
		}
	}
	return runScenario(args, stdout, stderr, false)
}

// runFlags are the flags of run and replay, read.
type runFlags struct {
	seedText, reportPath, eventsPath string
	asJSON, trace, force             bool
	reportBudget                     int64
}

// runScenario is 'locklab run' and, with replay set, 'locklab replay',
// which refuses --seed: a counterexample carries its own seed, and a run
// of another seed is not its replay.
func runScenario(args []string, stdout, stderr io.Writer, replay bool) error {
	name := "run"
	if replay {
		name = "replay"
	}
	fs := newFlagSet(name, runUsage, stdout)
	var f runFlags
	fs.StringVar(&f.seedText, "seed", "", "")
	fs.BoolVar(&f.asJSON, "json", false, "")
	fs.BoolVar(&f.trace, "trace", false, "")
	fs.StringVar(&f.reportPath, "report", "", "")
	fs.StringVar(&f.eventsPath, "events", "", "")
	fs.BoolVar(&f.force, "force", false, "")
	budgetText := fs.String("max-report-bytes", strconv.FormatInt(defaultReportBytes, 10), "")
	limits := limitFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		if replay {
			return usagef("replay needs exactly one scenario file (a counterexample written by 'locklab explore'), got %d arguments", len(pos))
		}
		return usagef("run needs exactly one scenario (an id from 'locklab list' or a .yaml file), got %d arguments", len(pos))
	}
	if replay && f.seedText != "" {
		return usagef("--seed: replay reruns a file with the seed it carries (a counterexample is its seed); to run the scenario with another seed, a different run that replays nothing, use 'locklab run %s --seed %s'", shellWord(pos[0]), term(f.seedText, false))
	}
	lim, err := limits()
	if err != nil {
		return err
	}
	if f.reportBudget, err = parseCount("--max-report-bytes", *budgetText, 1, maxReportBytes); err != nil {
		return err
	}
	if err := checkRunOutputs(pos[0], f); err != nil {
		return err
	}
	sc, err := scenarios.LoadWith(pos[0], lim)
	if err != nil {
		return &usageError{err.Error()}
	}
	// A counterexample must agree with itself before it runs: a file cut
	// short or edited is bad input, not a pass.
	if err := sc.CheckFile(); err != nil {
		return &usageError{err.Error()}
	}
	seed := sc.Seed
	if f.seedText != "" {
		seed, err = strconv.ParseUint(f.seedText, 10, 64)
		if err != nil {
			return usagef("--seed: expected a non-negative integer, got %q", f.seedText)
		}
	}
	return runAndPrint(sc, seed, pos[0], f, stdout, stderr)
}

// checkRunOutputs refuses bad combinations of stdout users and output
// paths, before the scenario is read.
func checkRunOutputs(arg string, f runFlags) error {
	if f.reportPath == "-" && f.asJSON {
		return usagef("--report - and --json both want stdout; write the report to a file")
	}
	if f.eventsPath == "-" && (f.asJSON || f.reportPath == "-") {
		return usagef("--events - wants stdout, and so does %s; write the events to a file", map[bool]string{true: "--json", false: "--report -"}[f.asJSON])
	}
	return checkOutputs([]string{arg}, []outputFlag{{"--report", f.reportPath}, {"--events", f.eventsPath}}, f.force)
}

// runAndPrint runs sc, prints the outcome (verdict, witness, replay
// command) and only then writes the report and gives the events file its
// name: a write that fails loses nothing printed and exits 3.
func runAndPrint(sc *scenarios.Scenario, seed uint64, arg string, f runFlags, stdout, stderr io.Writer) error {
	// With --report - or --events -, stdout carries that and the summary
	// goes to stderr.
	textOut := stdout
	if f.reportPath == "-" || f.eventsPath == "-" {
		textOut = stderr
	}
	for _, w := range sc.Warnings {
		fmt.Fprintf(stderr, "locklab: warning: %s\n", term(w.Error(), false))
	}
	stream, err := openRecordStream(f.eventsPath, stdout, f.trace && !f.asJSON)
	if err != nil {
		return err
	}
	opt := runner.Options{KeepTrace: f.reportPath != "", KeepBudget: f.reportBudget, Sink: stream.sink()}
	res, cmp, err := runner.RunCompared(sc, seed, opt)
	if err != nil {
		stream.abort()
		return err
	}
	out := buildRunOutput(res, arg)
	out.Compared = cmp
	// A fault already warned about before the run is not warned about
	// again when it indeed did not fire.
	warned := map[string]bool{}
	for _, w := range sc.Warnings {
		out.Warnings = append(out.Warnings, w.Error())
		warned[strings.SplitN(w.Field, ".", 2)[0]] = true
	}
	for _, w := range res.Warnings {
		if warned[strings.SplitN(w, " ", 2)[0]] {
			continue
		}
		out.Warnings = append(out.Warnings, w)
		fmt.Fprintf(stderr, "locklab: warning: %s\n", term(w, false))
	}
	replayErr := sc.CheckReplay(res.Seed, res.Report, res.TraceSHA256)
	if replayErr != nil {
		out.MatchesExpectation = false
		out.Mismatch = replayErr.Error()
	}
	if p := sc.Counterexample; p != nil && seed != p.Seed {
		out.DifferentRun = fmt.Sprintf("seed %d is not the counterexample's seed %d: this is another run of the file's scenario, not a replay of the counterexample", seed, p.Seed)
	}
	if f.asJSON {
		if err := writeJSON(stdout, out); err != nil {
			stream.abort()
			return err
		}
	} else {
		printRun(textOut, res, out, stream)
	}
	if replayErr != nil {
		fmt.Fprintf(stderr, "locklab: %s\n", term(replayErr.Error(), false))
	}
	werr := stream.finish()
	if werr == nil {
		werr = writeRunReport(f.reportPath, stdout, res, cmp, out.Replay)
		if werr == nil && f.reportPath != "" && f.reportPath != "-" && !f.asJSON {
			fmt.Fprintf(textOut, "Report: %s\n", term(f.reportPath, false))
		}
	}
	if werr != nil {
		printErrorLines(stderr, werr.Error()+" (the outcome above stands; exit status 3: an output was not written)")
		return &exitError{exitWriteFailed}
	}
	if !out.MatchesExpectation {
		return &exitError{1}
	}
	return nil
}

// writeRunReport writes the HTML report of res to path ("-": stdout; "":
// not asked for). A run whose kept trace passed --max-report-bytes has no
// report: a report of a prefix would show a different run.
func writeRunReport(path string, stdout io.Writer, res *runner.Result, cmp []runner.Comparison, replay string) error {
	if path == "" {
		return nil
	}
	truncated := res.TraceTruncated
	for _, c := range cmp {
		truncated = truncated || (c.Result != nil && c.Result.TraceTruncated)
	}
	if truncated {
		return fmt.Errorf("--report: not written: the run's %d events need more than --max-report-bytes (%d bytes of kept trace) to draw; raise it with --max-report-bytes (memory grows about %dx with it), or write the events with --events, which streams them to disk", res.TraceLines, res.TraceKeptBytes, reportMemoryFactor)
	}
	if path == "-" {
		return reports.WriteRun(stdout, res, cmp, replay)
	}
	return writeAtomic(path, func(w io.Writer) error { return reports.WriteRun(w, res, cmp, replay) })
}

// algorithmLabel is the algorithm with the options that change what it
// does: "set-nx-px-lua +watchdog +fencing".
func algorithmLabel(s *scenarios.Scenario) string {
	label := s.Algorithm
	if s.Params["watchdog"] == "true" {
		label += " +watchdog"
	}
	if f := s.Params[algorithms.ParamTokenSource]; f != "" && f != "none" {
		label += " +fencing"
	}
	return label
}

func expectedMap(sc *scenarios.Scenario) map[string]string {
	e, m := sc.Expect, map[string]string{}
	if e.MutualExclusion != "" {
		m["mutual_exclusion"] = string(e.MutualExclusion)
	}
	if e.Resource != "" {
		m["resource"] = string(e.Resource)
	}
	if e.Liveness != "" {
		m["liveness"] = string(e.Liveness)
	}
	for name, bound := range sc.AtMost {
		m[name] = fmt.Sprintf("<= %d", bound)
	}
	return m
}

func buildRunOutput(res *runner.Result, arg string) runOutput {
	sc := res.Scenario
	w := res.Report.Witness
	out := runOutput{
		Scenario:           sc.ID,
		Title:              sc.Title,
		Algorithm:          sc.Algorithm,
		Seed:               res.Seed,
		Verdict:            res.Report.Verdict,
		Expected:           expectedMap(sc),
		MatchesExpectation: res.Matches(),
		Witness:            witnessOutput{MutualExclusion: w.MutualExclusion, Resource: w.Resource, Liveness: w.Liveness, Text: witnessText(res.Report)},
		TraceSHA256:        res.TraceSHA256,
		TraceEvents:        res.TraceLines,
		Faults:             []faultOutput{},
		SimulatedSeconds:   res.End.Seconds(),
		Stopped:            res.Stopped,
		Work:               res.Work,
		Replay:             fmt.Sprintf("locklab run %s --seed %d", shellWord(arg), res.Seed),
		Warnings:           []string{},
	}
	for _, a := range res.Applied {
		fo := faultOutput{At: a.At.Seconds(), Text: a.Text, Fault: a.Fault}
		if a.Until > 0 {
			fo.Until = a.Until.Seconds()
		}
		out.Faults = append(out.Faults, fo)
	}
	m := res.Report.Metrics
	out.Metrics = map[string]interface{}{
		"acquisitions":          m.Acquisitions,
		"writes_accepted":       m.Writes,
		"writes_rejected":       m.RejectedWrites,
		"final_stock":           m.FinalValue,
		"longest_unavailable_s": m.Unavailable.Seconds(),
		"messages":              res.Messages,
		"messages_lost":         res.Dropped,
	}
	for _, bm := range res.Metrics {
		out.Metrics[bm.Name] = bm.Value
	}
	return out
}

func witnessText(r *checker.Report) []string {
	var out []string
	if o := r.Witness.MutualExclusion; o != nil {
		out = append(out, "mutual exclusion: "+o.String())
	}
	if rw := r.Witness.Resource; rw != nil {
		out = append(out, "resource: "+rw.String())
	}
	if u := r.Witness.Liveness; u != nil {
		out = append(out, "liveness: "+u.String())
	}
	if s := r.Witness.Starvation; s != nil {
		out = append(out, "liveness: "+s.String())
	}
	if out == nil {
		out = []string{}
	}
	return out
}

func printRun(w io.Writer, res *runner.Result, out runOutput, stream *recordStream) {
	sc := res.Scenario
	fmt.Fprintf(w, "%s — %s\n", term(sc.ID, false), term(sc.Title, false))
	info, _ := algorithms.Lookup(sc.Algorithm)
	where := "nodes " + strings.Join(sc.NodeNames(), ",")
	if !scenarios.BackendOf(sc.Algorithm).RedisNodes {
		where = info.Backend
	}
	fmt.Fprintf(w, "algorithm %s (%s) · %d clients · %s · seed %d · %.3fs simulated\n\n",
		algorithmLabel(sc), info.Summary, sc.Clients.Count, where, res.Seed, res.End.Seconds())
	if res.Stopped != nil {
		// Said before the verdict: the verdict is read in its light.
		fmt.Fprintf(w, "Stopped: %s.\n\n", res.Stopped.Text())
	}

	fmt.Fprintln(w, "Faults applied:")
	if len(res.Applied) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, a := range res.Applied {
		until := ""
		if a.Until > 0 {
			until = fmt.Sprintf(" (until %s)", checker.Sec(a.Until))
		}
		fmt.Fprintf(w, "  %9s  %s%s\n", checker.Sec(a.At), term(a.Text, false), until)
	}
	fmt.Fprintln(w)

	printVerdictTable(w, res)

	if len(out.Witness.Text) > 0 {
		fmt.Fprintln(w, "Witness:")
		for _, t := range out.Witness.Text {
			fmt.Fprintf(w, "  %s\n", t)
		}
		fmt.Fprintln(w)
	}
	m := res.Report.Metrics
	fmt.Fprintf(w, "Metrics: %d acquisitions, %d writes accepted, %d rejected, final stock %d, longest unavailable %.3fs, %d messages (%d lost)",
		m.Acquisitions, m.Writes, m.RejectedWrites, m.FinalValue, m.Unavailable.Seconds(), res.Messages, res.Dropped)
	for _, bm := range res.Metrics {
		fmt.Fprintf(w, ", %s %d", strings.ReplaceAll(bm.Name, "_", " "), bm.Value)
	}
	fmt.Fprintln(w)
	for _, c := range out.Compared {
		fmt.Fprintf(w, "Compared with %s: mutual exclusion %s, resource %s, liveness %s", c.Algorithm, c.Verdict.MutualExclusion, c.Verdict.Resource, c.Verdict.Liveness)
		for _, m := range c.Metrics {
			fmt.Fprintf(w, ", %s %d", strings.ReplaceAll(m.Name, "_", " "), m.Value)
		}
		fmt.Fprintln(w)
	}
	if sc.Narrative.Fix != "" {
		fmt.Fprintf(w, "\nWhy: %s\nFix: %s\n", term(sc.Narrative.Why, true), term(sc.Narrative.Fix, true))
	}
	if sc.Twin != "" {
		fmt.Fprintf(w, "Twin: locklab run %s\n", term(sc.Twin, false))
	}
	fmt.Fprintf(w, "\nTrace: %d events, sha256 %s\nReplay: %s\n", res.TraceLines, res.TraceSHA256, term(out.Replay, false))
	if stream != nil && stream.trace != nil {
		fmt.Fprintln(w, "\nTrace (true time in seconds):")
		if err := stream.printTrace(w); err != nil && stream.err == nil {
			stream.err = fmt.Errorf("--trace: %w", err)
		}
	}
	if out.DifferentRun != "" {
		fmt.Fprintf(w, "\nNote: %s.\n", out.DifferentRun)
	}
	if out.Mismatch != "" {
		fmt.Fprintln(w, "\nResult: the replay does NOT reproduce the counterexample file (see below).")
	} else if out.MatchesExpectation {
		fmt.Fprintln(w, "\nResult: the run matches the scenario's expectation.")
	} else {
		fmt.Fprintln(w, "\nResult: the run does NOT match the scenario's expectation.")
	}
}

// printVerdictTable prints each property's verdict beside the scenario's
// expectation, and each at_most bound beside the run's metric.
func printVerdictTable(w io.Writer, res *runner.Result) {
	sc := res.Scenario
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Verdict:\tgot\texpected\t")
	row := func(name string, got checker.Status, want checker.Status) {
		exp, mark := "-", ""
		if want != "" {
			exp = string(want)
			mark = "✓"
			if got != want {
				mark = "✗ MISMATCH"
			}
		}
		g := string(got)
		if got == checker.Violated {
			g = "VIOLATED"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, g, exp, mark)
	}
	v, e := res.Report.Verdict, sc.Expect
	row("mutual exclusion", v.MutualExclusion, e.MutualExclusion)
	row("resource", v.Resource, e.Resource)
	row("liveness", v.Liveness, e.Liveness)
	for _, name := range slices.Sorted(maps.Keys(sc.AtMost)) {
		got, ok := res.Metric(name)
		g, mark := fmt.Sprint(got), "✓"
		if !ok {
			g = "-"
		}
		if !ok || got > sc.AtMost[name] {
			mark = "✗ MISMATCH"
		}
		fmt.Fprintf(tw, "  %s\t%s\t<= %d\t%s\n", strings.ReplaceAll(name, "_", " "), g, sc.AtMost[name], mark)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
