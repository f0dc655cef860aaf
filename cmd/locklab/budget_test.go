package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// A run that reaches its work budget ends there with a verdict: the text
// summary says so before the verdict, --json carries "stopped", and the
// exit status is the verdict's (issue 25: it was exit 2, "the run
// delivered more than N messages", and no verdict). --max-messages, the
// budget's old name, sets the same budget.
func TestWorkLimitCutsTheRunShort(t *testing.T) {
	code, out, stderr := runCLI(t, "run", "del-wrong-client", "--max-work", "100")
	if code != 1 || !strings.Contains(out, "Stopped: the run was cut short at 1.198s: it used its work budget of 100 kernel steps (events scheduled, messages lost, bytes carried); raise it with --max-work (now 100)") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, stderr)
	}
	if strings.Index(out, "Stopped:") > strings.Index(out, "Verdict:") {
		t.Fatalf("the cut is said after the verdict:\n%s", out)
	}
	for _, flag := range []string{"--max-work", "--max-messages"} {
		code, out, stderr = runCLI(t, "run", "del-wrong-client", flag, "100", "--json")
		var got struct {
			Stopped *struct {
				Limit  string `json:"limit"`
				AtNS   int64  `json:"at_ns"`
				Work   int64  `json:"work"`
				Budget int64  `json:"budget"`
				Hint   string `json:"hint"`
			} `json:"stopped"`
			Work             int64   `json:"work"`
			SimulatedSeconds float64 `json:"simulated_seconds"`
			Verdict          map[string]string
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 {
			t.Fatalf("%s: exit %d, %v:\n%s\n%s", flag, code, err, out, stderr)
		}
		s := got.Stopped
		if s == nil || s.Limit != "work" || s.Budget != 100 || s.Work != got.Work || s.Work <= 100 ||
			float64(s.AtNS)/1e9 != got.SimulatedSeconds || !strings.Contains(s.Hint, "--max-work") || got.Verdict["mutual_exclusion"] != "ok" {
			t.Fatalf("%s: %s", flag, out)
		}
	}
	// Within its budget a run is not marked.
	code, out, _ = runCLI(t, "run", "del-wrong-client", "--json")
	if code != 0 || strings.Contains(out, `"stopped"`) || !strings.Contains(out, `"work": `) {
		t.Fatalf("exit %d: %s", code, out)
	}
	code, _, stderr = runCLI(t, "run", "del-wrong-client", "--max-work", "0")
	if code != 2 || !strings.Contains(stderr, "--max-work: expected a limit between 1 and 2147483647, found 0") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
