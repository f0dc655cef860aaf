package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// shardJSON is a minimal valid shard summary, shard i of n.
func shardJSON(i, n int) string {
	return `{"algorithm": "redlock", "seed": 1, "faults": ["clock"], "runs": 2, "found": false, "violations": [],` +
		` "shard": {"index": ` + string(rune('0'+i)) + `, "count": ` + string(rune('0'+n)) + `, "run_bound": 4, "all": true}}` + "\n"
}

// Issue 32, item 4: merge read /dev/zero without bound, took the first of
// two objects, and said "field : expected a main.exploreOutput" of [].
func TestMergeReadsBoundedExactlyOneObject(t *testing.T) {
	dir := inDir(t)
	write := func(name, text string) string {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
		return name
	}
	one, two := write("1.json", shardJSON(1, 2)), write("2.json", shardJSON(2, 2))
	if code, out, stderr := runCLI(t, "merge", one, two); code != 0 || !strings.Contains(out, `"runs": 4`) {
		t.Fatalf("valid shards: exit %d, %s %s", code, out, stderr)
	}
	fifo := filepath.Join(dir, "pipe")
	syscall.Mkfifo(fifo, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{one, write("arr.json", "[]")}, "locklab: arr.json:1:1: found a JSON array; expected the JSON printed by 'locklab explore ... --shard I/N --json' (one JSON object)"},
		{[]string{one, write("twice.json", shardJSON(2, 2)+shardJSON(2, 2))}, "locklab: twice.json:2:1: more after the shard's JSON object (another JSON object); expected exactly one JSON object per file"},
		{[]string{one, write("junk.json", shardJSON(2, 2)+"junk")}, "locklab: junk.json:2:1: more after the shard's JSON object (\"j\", not JSON)"},
		{[]string{one, write("empty.json", "  \n")}, "locklab: empty.json:2:1: the file is empty"},
		{[]string{one, "/dev/zero"}, "locklab: /dev/zero is a character device, not a regular file"},
		{[]string{one, fifo}, "is a named pipe (FIFO), not a regular file"},
		{[]string{one, dir}, "is a directory, not a regular file"},
		{[]string{"--max-file-size", "100", one, two}, "locklab: 1.json: 166 bytes; expected a shard's JSON of at most 100 bytes (the limit; raise it with --max-file-size)"},
		{[]string{one}, "locklab: merge: shard(s) 2/2 missing; expected all 2 shards of the sweep (a Kubernetes Indexed Job's completion index is the shard minus one)"},
		{[]string{one, write("other.json", strings.Replace(shardJSON(2, 2), `"seed": 1`, `"seed": 2`, 1))}, "locklab: other.json: field seed is 2 but 1.json has 1; the files are not shards of one sweep"},
	} {
		code, out, stderr := runCLI(t, append([]string{"merge"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("merge %v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
