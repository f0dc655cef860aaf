// Command mutantrun is the mutation gate's runner (cmd/locklab
// mutation_test.go). The gate builds it once per mutant, with the mutated
// file swapped in by `go build -overlay`, and runs catalogue scenarios in
// this one process, one after another, in the order given on the command
// line. It links only package scenarios and what that reaches: the
// reports, the CLI and their dependencies are neither recompiled nor
// linked for each mutant, which is most of what a mutant used to cost.
//
//	mutantrun [-all] ID...
//
// For every id it prints one JSON line {"run","killed","why"} as soon as
// the run is judged, and it stops after the first killed run unless -all
// is given (the gate's check of the unmutated tree wants every outcome).
// A run is killed on exactly the grounds `locklab run ID --json` fails
// on: the scenario does not load or its file does not agree with itself
// (exit 2 there), the run returns an error, its replay check fails, or
// its verdict or a bounded metric does not match the expectation (exit
// 1). A panic on the run's own goroutine is caught and kills the run; a
// panic elsewhere, or a run that never ends, ends or stalls the process,
// and the gate blames the first id without a line.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

// outcome is one line of output; the gate decodes the same fields.
type outcome struct {
	Run    string `json:"run"`
	Killed bool   `json:"killed"`
	Why    string `json:"why,omitempty"`
}

// main goes through bubblehost.Main, as the CLI's does: scenarios on the
// real go-zookeeper client run inside testing/synctest bubbles, which need
// a hosted test (sim/bubblehost).
func main() {
	bubblehost.Main(func() int { return run(os.Args[1:]) })
}

func run(args []string) int {
	fs := flag.NewFlagSet("mutantrun", flag.ContinueOnError)
	all := fs.Bool("all", false, "run every id, even after a kill")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mutantrun [-all] ID...")
		return 2
	}
	enc := json.NewEncoder(os.Stdout)
	for _, id := range fs.Args() {
		o := judge(id)
		if err := enc.Encode(o); err != nil {
			fmt.Fprintln(os.Stderr, "mutantrun:", err)
			return 2
		}
		if o.Killed && !*all {
			break
		}
	}
	return 0
}

// judge runs one catalogue scenario at its own seed, as `locklab run ID`
// does, and says whether the run kills the mutant.
func judge(id string) (o outcome) {
	o.Run = id
	defer func() {
		if p := recover(); p != nil {
			o.Killed, o.Why = true, fmt.Sprintf("error: panic: %v", p)
		}
	}()
	kill := func(why string) outcome {
		o.Killed, o.Why = true, why
		return o
	}
	sc, err := scenarios.LoadWith(id, scenarios.DefaultLimits)
	if err != nil {
		return kill("error: " + err.Error())
	}
	if err := sc.CheckFile(); err != nil {
		return kill("error: " + err.Error())
	}
	res, _, err := runner.RunCompared(sc, sc.Seed, runner.Options{})
	if err != nil {
		return kill("error: " + err.Error())
	}
	if err := sc.CheckReplay(res.Seed, res.Report, res.TraceSHA256); err != nil {
		return kill("replay: " + err.Error())
	}
	if !res.Matches() {
		return kill(mismatch(res))
	}
	return o
}

// mismatch names the verdicts and bounded metrics that differ from the
// expectation, in the words of the gate's table.
func mismatch(res *runner.Result) string {
	e, v := res.Scenario.Expect, res.Report.Verdict
	var diffs []string
	for _, p := range []struct{ name, want, got string }{
		{"liveness", string(e.Liveness), string(v.Liveness)},
		{"mutual_exclusion", string(e.MutualExclusion), string(v.MutualExclusion)},
		{"resource", string(e.Resource), string(v.Resource)},
	} {
		if p.want != "" && p.want != p.got {
			diffs = append(diffs, fmt.Sprintf("%s %s (expected %s)", p.name, p.got, p.want))
		}
	}
	for _, name := range res.MetricsOverBound() {
		got := "not reported"
		if n, ok := res.Metric(name); ok {
			got = fmt.Sprint(n)
		}
		diffs = append(diffs, fmt.Sprintf("%s %s (expected <= %d)", name, got, res.Scenario.AtMost[name]))
	}
	if len(diffs) == 0 {
		return "does not match its expectation"
	}
	return strings.Join(diffs, ", ")
}
