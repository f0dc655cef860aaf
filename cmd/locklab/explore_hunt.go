package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/scenarios"
)

// huntable are the properties --hunt may name, in the checker's order.
var huntable = []string{"mutual_exclusion", "resource", "liveness"}

// unhuntedOutput is the JSON shape of the runs --hunt passed over: they
// broke the lock, only not in a property the exploration hunted, so they
// are counted and named, never dropped.
type unhuntedOutput struct {
	Runs       int      `json:"runs"`
	FirstRun   int      `json:"first_run"`
	Properties []string `json:"properties"`
	Replay     string   `json:"replay"`
}

// parseHunt reads --hunt: a comma-separated list of properties (a hyphen
// may stand for the underscore). An empty list hunts every property.
func parseHunt(text string) ([]string, error) {
	if text == "" {
		return nil, nil
	}
	var hunt []string
	for _, p := range strings.Split(text, ",") {
		p = strings.ReplaceAll(strings.TrimSpace(p), "-", "_")
		if !slices.Contains(huntable, p) {
			msg := fmt.Sprintf("--hunt: unknown property %q; expected a comma-separated list of %s", term(p, false), strings.Join(huntable, ", "))
			if d := scenarios.DidYouMean(p, huntable); d != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", d)
			}
			return nil, usagef("%s", msg)
		}
		if !slices.Contains(hunt, p) {
			hunt = append(hunt, p)
		}
	}
	return hunt, nil
}

// huntFlag is the --hunt part of a command that explores the same runs.
func huntFlag(opt explore.Options) string {
	if len(opt.Hunt) == 0 {
		return ""
	}
	return " --hunt " + strings.Join(opt.Hunt, ",")
}

// unhuntedSummary names the runs --hunt passed over, with the command that
// finds the first of them (the same sweep without --hunt, up to that run).
func unhuntedSummary(alg string, opt explore.Options, faultsText string, res *explore.Result) *unhuntedOutput {
	if res.Unhunted == 0 {
		return nil
	}
	again := fmt.Sprintf("locklab explore %s --seed %d --runs %d", alg, opt.Seed, res.UnhuntedFirst)
	if faultsText != "all" {
		again += " --faults " + shellWord(faultsText)
	}
	if opt.Shards > 0 {
		again += fmt.Sprintf(" --shard %d/%d", opt.Shard, opt.Shards)
	}
	return &unhuntedOutput{Runs: res.Unhunted, FirstRun: res.UnhuntedFirst, Properties: res.UnhuntedProperties, Replay: again}
}

// printUnhunted says, in the text summary, that the lock broke in runs
// --hunt passed over: "no violation" must never be read into them.
func printUnhunted(w io.Writer, u *unhuntedOutput) {
	if u == nil {
		return
	}
	props := strings.ReplaceAll(strings.Join(u.Properties, ", "), "_", " ")
	fmt.Fprintf(w, "passed over: %d run(s) violated %s, which --hunt leaves out (first: run %d; find it: %s)\n", u.Runs, props, u.FirstRun, term(u.Replay, false))
}
