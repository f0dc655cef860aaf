package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

var digests = regexp.MustCompile(`trace_sha256: [0-9a-f]{64}`)

var foundLine = regexp.MustCompile(`locklab: found (.+) violated in run (\d+) \(counterexample seed (\d+)\); find it again with: (.+)\n`)

// The command an exploration prints to "find it again" really finds the
// same violation in the same run, with the same counterexample, byte for
// byte: it carries the seed, the faults, --runs up to the finding (the
// default budget of a plain `explore` would stop elsewhere or never get
// there in a shard) and the shard. The cases are findings past run 0, so
// a command without --runs, or with the wrong count, would not do.
func TestExploreFindItAgain(t *testing.T) {
	inDir(t)
	for _, args := range [][]string{
		{"setnx-expire", "--faults", "crash", "--seed", "2", "--workers", "2"},
		{"set-nx-px-lua", "--faults", "drop", "--seed", "4", "--shard", "2/3", "--workers", "2"},
	} {
		code, _, stderr := runCLI(t, append(append([]string{"explore"}, args...), "--out", "first.yaml", "--force")...)
		m := foundLine.FindStringSubmatch(stderr)
		if code != 1 || m == nil {
			t.Fatalf("explore %v: exit %d, no finding printed:\n%s", args, code, stderr)
		}
		if m[2] == "0" {
			t.Fatalf("explore %v: found in run 0; the case needs a later run to test --runs", args)
		}
		again := strings.Fields(m[4])
		if again[0] != "locklab" || again[1] != "explore" {
			t.Fatalf("explore %v: the printed command is not a locklab explore: %q", args, m[4])
		}
		code, _, stderr2 := runCLI(t, append(again[1:], "--out", "again.yaml", "--force")...)
		m2 := foundLine.FindStringSubmatch(stderr2)
		if code != 1 || m2 == nil || m2[1] != m[1] || m2[2] != m[2] || m2[3] != m[3] {
			t.Fatalf("explore %v found %s in run %s (seed %s); its printed command %q: exit %d\n%s", args, m[1], m[2], m[3], m[4], code, stderr2)
		}
		// The files name themselves; what was found is in their
		// counterexample block: the digest of the run's trace (the scenario
		// digest covers the file's own id).
		first, _ := os.ReadFile("first.yaml")
		second, _ := os.ReadFile("again.yaml")
		d1, d2 := digests.FindAllString(string(first), -1), digests.FindAllString(string(second), -1)
		if len(d1) != 1 || strings.Join(d1, "\n") != strings.Join(d2, "\n") {
			t.Errorf("explore %v: the counterexample found again differs: %q, then %q", args, d1, d2)
		}
	}
}
