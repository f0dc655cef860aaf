package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

const mergeUsage = `Usage: locklab merge FILE...

Joins the outputs of 'locklab explore ... --shard I/N --all --json', one file
per shard, into the summary the unsharded sweep prints with --all --json:
every violating run index in order, the counts, and the counterexample of
the lowest violating run (each shard shrank its own first violation; the
shrinking is deterministic, so it is the sweep's counterexample).

The files must come from the same sweep (algorithm, seed, faults, --runs,
--all and N agree) and cover every shard 1..N exactly once; otherwise
merge names the file and what differs. A "-" reads standard input.
Without --all each shard stopped at its own first violation, and the merge
lists only the sweep's first one.

Exit status: 1 when some shard found a violation, 0 when none did, 2 on
bad input.
`

// maxMergedViolations bounds the violating runs listed, like explore's
// default bound; the others are counted in more_violations.
const maxMergedViolations = 1000

func runMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", mergeUsage, stdout)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("merge needs the output files of the shards ('locklab explore ... --shard I/N --all --json > FILE')")
	}
	parts := make([]exploreOutput, len(files))
	for k, name := range files {
		if parts[k], err = readShardOutput(name); err != nil {
			return err
		}
	}
	if err := checkShardsJoin(files, parts); err != nil {
		return err
	}
	merged := mergeShards(parts)
	if err := writeJSON(stdout, merged); err != nil {
		return err
	}
	if merged.Found {
		return &exitError{1}
	}
	return nil
}

// readShardOutput reads one shard's JSON summary.
func readShardOutput(name string) (exploreOutput, error) {
	var out exploreOutput
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return out, usagef("merge: cannot read %s: %v", term(name, false), err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := lineCol(data, se.Offset)
			return out, usagef("%s:%d:%d: %v; expected the JSON printed by 'locklab explore ... --shard I/N --json'", term(name, false), line, col, err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			line, col := lineCol(data, int64(len(data)))
			return out, usagef("%s:%d:%d: the JSON ends early (a shard cut short?); expected the JSON printed by 'locklab explore ... --shard I/N --json'", term(name, false), line, col)
		case errors.As(err, &te):
			line, col := lineCol(data, te.Offset)
			return out, usagef("%s:%d:%d: field %s: expected a %s, found a JSON %s", term(name, false), line, col, te.Field, te.Type, te.Value)
		}
		return out, usagef("%s: %v; expected the JSON printed by 'locklab explore ... --shard I/N --json'", term(name, false), err)
	}
	if out.Shard == nil {
		return out, usagef("%s: no \"shard\" field; expected the output of 'locklab explore ... --shard I/N --json' (an unsharded sweep needs no merge)", term(name, false))
	}
	return out, nil
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := 1 + strings.Count(string(before), "\n")
	col := int(off) - strings.LastIndex(string(before), "\n")
	return line, col
}

// checkShardsJoin refuses parts that are not the shards of one sweep:
// different sweeps, a shard twice, or a shard missing.
func checkShardsJoin(files []string, parts []exploreOutput) error {
	first := parts[0]
	seen := map[int]string{}
	for k, p := range parts {
		for _, d := range []struct {
			field     string
			got, want any
		}{
			{"algorithm", p.Algorithm, first.Algorithm},
			{"seed", p.Seed, first.Seed},
			{"faults", strings.Join(p.Faults, ","), strings.Join(first.Faults, ",")},
			{"shard.count", p.Shard.Count, first.Shard.Count},
			{"shard.run_bound", p.Shard.RunBound, first.Shard.RunBound},
			{"shard.all", p.Shard.All, first.Shard.All},
		} {
			if d.got != d.want {
				return usagef("%s: field %s is %v but %s has %v; the files are not shards of one sweep", term(files[k], false), d.field, d.got, term(files[0], false), d.want)
			}
		}
		if p.Shard.Index < 1 || p.Shard.Index > p.Shard.Count {
			return usagef("%s: field shard.index is %d; expected 1 to %d", term(files[k], false), p.Shard.Index, p.Shard.Count)
		}
		if other, dup := seen[p.Shard.Index]; dup {
			return usagef("%s: shard %d/%d is also in %s; expected each shard once", term(files[k], false), p.Shard.Index, p.Shard.Count, term(other, false))
		}
		seen[p.Shard.Index] = files[k]
		for _, v := range p.Violations {
			if (v.Run-1)%p.Shard.Count != p.Shard.Index-1 {
				return usagef("%s: violating run %d is not a run of shard %d/%d", term(files[k], false), v.Run, p.Shard.Index, p.Shard.Count)
			}
		}
	}
	var missing []string
	for i := 1; i <= first.Shard.Count; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Shard.Count))
		}
	}
	if len(missing) > 0 {
		return usagef("merge: shard(s) %s missing; expected all %d shards of the sweep", strings.Join(missing, ", "), first.Shard.Count)
	}
	return nil
}

// mergeShards is the unsharded sweep's summary: run counts add up, the
// violating runs are listed in run order, and the counterexample is the
// one of the lowest violating run.
func mergeShards(parts []exploreOutput) exploreOutput {
	out := exploreOutput{Algorithm: parts[0].Algorithm, Seed: parts[0].Seed, Faults: parts[0].Faults, Violations: []exploreViolation{}}
	lowest := -1
	for _, p := range parts {
		out.Runs += p.Runs
		out.Interrupted = out.Interrupted || p.Interrupted
		out.MoreViolations += p.MoreViolations
		out.Violations = append(out.Violations, p.Violations...)
		if len(p.Violations) > 0 && (lowest < 0 || p.Violations[0].Run < lowest) {
			lowest = p.Violations[0].Run
			out.Counterexample = p.Counterexample
		}
	}
	slices.SortFunc(out.Violations, func(a, b exploreViolation) int { return a.Run - b.Run })
	if !parts[0].Shard.All && len(out.Violations) > 1 {
		out.Violations = out.Violations[:1]
	}
	if n := len(out.Violations); n > maxMergedViolations {
		out.MoreViolations += n - maxMergedViolations
		out.Violations = out.Violations[:maxMergedViolations]
	}
	out.Found = len(out.Violations) > 0
	return out
}
