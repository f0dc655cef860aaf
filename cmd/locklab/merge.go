package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

const mergeUsage = `Usage: locklab merge [--max-file-size BYTES] FILE...

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

Each FILE must be a regular file (or "-") of at most --max-file-size bytes
(default 67108864, 64 MiB) holding exactly one JSON object; anything else
(a device, a second object, junk after it, an array) is refused by file,
line and column before anything is merged.

Exit status: 1 when some shard found a violation, 0 when none did, 2 on
bad input.
`

// maxMergedViolations bounds the violating runs listed, like explore's
// default bound; the others are counted in more_violations.
const maxMergedViolations = 1000

func runMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", mergeUsage, stdout)
	limitText := fs.String("max-file-size", strconv.Itoa(defaultMergeBytes), "")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	limit, err := parseCount("--max-file-size", *limitText, 1, maxFileBytes)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("merge needs the output files of the shards ('locklab explore ... --shard I/N --all --json > FILE')")
	}
	parts := make([]exploreOutput, len(files))
	for k, name := range files {
		if parts[k], err = readShardOutput(name, limit); err != nil {
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
	if merged.Found || merged.Unhunted != nil {
		return &exitError{1}
	}
	return nil
}

// defaultMergeBytes is merge's default --max-file-size: a shard's --all
// summary lists at most 1000 violating runs with their schedules, a few
// MiB at most; 64 MiB leaves room and keeps a merge of many shards far
// under 1 GB.
const defaultMergeBytes = 64 << 20

// readShardOutput reads one shard's JSON summary: a regular file (or
// stdin) of at most limit bytes holding exactly one JSON object. It reads
// at most limit+1 bytes whatever the file is, so /dev/zero or a huge file
// is refused without being held (issue 32).
func readShardOutput(name string, limit int64) (exploreOutput, error) {
	var out exploreOutput
	var r io.Reader = os.Stdin
	if name != "-" {
		// Checked before opening: opening a FIFO with no writer would
		// wait for ever.
		st, err := os.Stat(name)
		if err != nil {
			return out, usagef("merge: cannot read %s: %v", term(name, false), err)
		}
		if !st.Mode().IsRegular() {
			kind := fileKind(st.Mode())
			if st.IsDir() {
				kind = "a directory"
			}
			return out, usagef("%s is %s, not a regular file; expected a file holding the JSON printed by 'locklab explore ... --shard I/N --json'", term(name, false), kind)
		}
		if st.Size() > limit {
			return out, usagef("%s: %d bytes; expected a shard's JSON of at most %d bytes (the limit; raise it with --max-file-size)", term(name, false), st.Size(), limit)
		}
		f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return out, usagef("merge: cannot read %s: %v", term(name, false), err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return out, usagef("merge: cannot read %s: %v", term(name, false), err)
	}
	if int64(len(data)) > limit {
		return out, usagef("%s: more than %d bytes; expected a shard's JSON of at most %d bytes (the limit; raise it with --max-file-size)", term(name, false), limit, limit)
	}
	if err := decodeShard(name, data, &out); err != nil {
		return out, err
	}
	if out.Shard == nil {
		return out, usagef("%s: no \"shard\" field; expected the output of 'locklab explore ... --shard I/N --json' (an unsharded sweep needs no merge)", term(name, false))
	}
	return out, nil
}

const shardJSONWanted = "expected the JSON printed by 'locklab explore ... --shard I/N --json'"

// decodeShard decodes data, which must be exactly one JSON object and
// nothing after it but white space.
func decodeShard(name string, data []byte, out *exploreOutput) error {
	at := func(off int64) string {
		line, col := lineCol(data, off)
		return fmt.Sprintf("%s:%d:%d", term(name, false), line, col)
	}
	start := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
	switch {
	case start == len(data):
		return usagef("%s: the file is empty; %s", at(int64(start)), shardJSONWanted)
	case data[start] != '{':
		return usagef("%s: found %s; %s (one JSON object)", at(int64(start)), jsonKind(data[start]), shardJSONWanted)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return usagef("%s: %v; %s", at(se.Offset), err, shardJSONWanted)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return usagef("%s: the JSON ends early (a shard cut short?); %s", at(int64(len(data))), shardJSONWanted)
		case errors.As(err, &te):
			return usagef("%s: field %s: expected a %s, found a JSON %s", at(te.Offset), te.Field, te.Type, te.Value)
		}
		return usagef("%s: %v; %s", term(name, false), err, shardJSONWanted)
	}
	rest := dec.InputOffset()
	if trail := bytes.TrimLeft(data[rest:], " \t\r\n"); len(trail) > 0 {
		return usagef("%s: more after the shard's JSON object (%s); expected exactly one JSON object per file, one shard's output", at(int64(len(data)-len(trail))), jsonKind(trail[0]))
	}
	return nil
}

// jsonKind names what a JSON text starting with c is, for messages.
func jsonKind(c byte) string {
	switch {
	case c == '{':
		return "another JSON object"
	case c == '[':
		return "a JSON array"
	case c == '"':
		return "a JSON string"
	case c == 't' || c == 'f':
		return "a JSON boolean"
	case c == 'n':
		return "a JSON null"
	case c == '-' || c >= '0' && c <= '9':
		return "a JSON number"
	}
	return fmt.Sprintf("%q, not JSON", string(rune(c)))
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
			{"hunt", strings.Join(p.Hunt, ","), strings.Join(first.Hunt, ",")},
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
		return usagef("merge: shard(s) %s missing; expected all %d shards of the sweep (a Kubernetes Indexed Job's completion index is the shard minus one)", strings.Join(missing, ", "), first.Shard.Count)
	}
	return nil
}

// mergeShards is the unsharded sweep's summary: run counts add up, the
// violating runs are listed in run order, and the counterexample is the
// one of the lowest violating run.
func mergeShards(parts []exploreOutput) exploreOutput {
	out := exploreOutput{Algorithm: parts[0].Algorithm, Seed: parts[0].Seed, Faults: parts[0].Faults, Violations: []exploreViolation{}, Hunt: parts[0].Hunt}
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
	out.Unhunted = mergeUnhunted(parts)
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

// mergeUnhunted joins the shards' counts of runs --hunt passed over: the
// counts add up (each shard counted up to its own first finding, or every
// run with --all), the first run and its command are the lowest shard's,
// and the properties are every shard's, in the checker's order.
func mergeUnhunted(parts []exploreOutput) *unhuntedOutput {
	var out *unhuntedOutput
	for _, p := range parts {
		u := p.Unhunted
		if u == nil {
			continue
		}
		if out == nil {
			out = &unhuntedOutput{FirstRun: u.FirstRun, Replay: u.Replay}
		}
		out.Runs += u.Runs
		if u.FirstRun < out.FirstRun {
			out.FirstRun, out.Replay = u.FirstRun, u.Replay
		}
		for _, prop := range u.Properties {
			if !slices.Contains(out.Properties, prop) {
				out.Properties = append(out.Properties, prop)
			}
		}
	}
	if out != nil {
		slices.SortFunc(out.Properties, func(a, b string) int { return slices.Index(huntable, a) - slices.Index(huntable, b) })
	}
	return out
}
