package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/locklab/locklab/sim/bubblehost"
)

// FuzzFlags fuzzes command lines (issue 25): a command from a bounded set
// (run of a small catalogue scenario, replay, list, help) and flags split
// from the input at NUL bytes. No command line panics; the exit status is
// 0, 1 or 2; a refusal (2) prints lines that start with "locklab:" and
// carry no control characters. Commands that can run for long (explore,
// matrix, course) are left to their own tests, so every input is cheap.
func FuzzFlags(f *testing.F) {
	dir := f.TempDir()
	old, err := os.Getwd()
	if err != nil {
		f.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.Chdir(old) })
	scenario := []byte("id: s\nalgorithm: set-nx-px-lua\nttl: 10s\nnodes: [A]\nclients: {count: 1, cycles: 1}\n")
	for _, seed := range []string{
		"run\x00s.yaml",
		"run\x00s.yaml\x00--max-file-size\x009223372036854775807",
		"run\x00s.yaml\x00--max-file-size\x00-1",
		"run\x00s.yaml\x00--seed\x0018446744073709551616",
		"run\x00s.yaml\x00--report\x00-",
		"run\x00s.yaml\x00--report\x00s.yaml",
		"run\x00s.yaml\x00--json\x00--trace",
		"run\x00s.yaml\x00--max-duration\x002562047h",
		"run\x00s.yaml\x00--max-messages\x000",
		"run\x00s.yaml\x00--max-work\x001",
		"run\x00s.yaml\x00--max-messages\x001\x00--json",
		"run\x00s.yaml\x00--max-work\x002147483648",
		"run\x00gc-pause-beyond-ttl\x00--seed\x003",
		"replay\x00s.yaml",
		"replay\x00-",
		"list\x00--json",
		"help\x00matrix",
		"run\x00\x1b[31mred",
		"run\x00s.yaml\x00--no-such-flag",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args := strings.Split(string(data), "\x00")
		switch args[0] {
		case "run", "replay", "list", "help":
		default:
			return
		}
		// --report and friends write files: only into this directory,
		// and every input starts from the same s.yaml.
		for _, a := range args {
			if strings.ContainsAny(a, `/\`) || strings.Contains(a, "..") {
				return
			}
		}
		os.WriteFile("s.yaml", scenario, 0o644)
		bubblehost.Bind(t)
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 0 && code != 1 && code != 2 {
			t.Fatalf("%q: exit %d\n%s", args, code, errb.String())
		}
		if code != 2 {
			return
		}
		for _, line := range strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n") {
			if !strings.HasPrefix(line, "locklab:") {
				t.Fatalf("%q: refusal line without the locklab: prefix: %q", args, line)
			}
			for _, r := range line {
				if r < 0x20 && r != '\t' || r == 0x7f || r == utf8.RuneError && !utf8.ValidString(line) {
					t.Fatalf("%q: control character %U reaches the terminal: %q", args, r, line)
				}
			}
		}
	})
}
