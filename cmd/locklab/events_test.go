package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `locklab run ID --events FILE` writes one JSON object per event with
// at_ns, actor and kind, and the run's digest is the one it has without
// the flag.
func TestRunEventsWritesJSONLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	code, out, stderr := runCLI(t, "run", "redlock-clock-jump", "--json", "--events", path)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var with map[string]any
	if err := json.Unmarshal([]byte(out), &with); err != nil {
		t.Fatalf("--json output: %v", err)
	}
	_, plainOut, _ := runCLI(t, "run", "redlock-clock-jump", "--json")
	var plain map[string]any
	if err := json.Unmarshal([]byte(plainOut), &plain); err != nil {
		t.Fatal(err)
	}
	if with["trace_sha256"] != plain["trace_sha256"] || with["trace_sha256"] == nil {
		t.Fatalf("digest %v with --events, %v without", with["trace_sha256"], plain["trace_sha256"])
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	kinds := map[string]int{}
	n := 0
	for sc.Scan() {
		n++
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d is not one JSON object: %v\n%s", n, err, sc.Text())
		}
		for _, k := range []string{"at_ns", "actor", "kind"} {
			if _, ok := e[k]; !ok {
				t.Fatalf("line %d has no %q: %s", n, k, sc.Text())
			}
		}
		if !strings.HasPrefix(sc.Text(), `{"at_ns":`) {
			t.Fatalf("line %d does not start with at_ns: %s", n, sc.Text())
		}
		kinds[e["kind"].(string)]++
	}
	if n == 0 {
		t.Fatal("no events written")
	}
	// The clock-jump lesson: clients send commands, nodes run them, clients
	// hold, the fault is applied.
	for _, k := range []string{"command.sent", "command.executed", "hold.began", "fault.applied"} {
		if kinds[k] == 0 {
			t.Errorf("no %s event among %v", k, kinds)
		}
	}
	// An existing file is not replaced without --force.
	code, _, stderr = runCLI(t, "run", "redlock-clock-jump", "--events", path)
	if code != 2 || !strings.Contains(stderr, "--events: ") || !strings.Contains(stderr, "--force") {
		t.Fatalf("existing events file: exit %d, stderr %q", code, stderr)
	}
}
