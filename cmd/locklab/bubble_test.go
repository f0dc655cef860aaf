package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// runBinary runs the built locklab (which goes through bubblehost.Main)
// and returns its exit status and output.
func runBinary(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(locklabBinary(t), args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// Hosting bubbles (bubblehost.Main starts the testing package around the
// program) changes nothing a user sees: the built binary prints what the
// command prints in process, byte for byte, exit status included, and
// none of testing's chatter; its flags are its own, testing's included.
func TestBinaryIsTheCommandInProcess(t *testing.T) {
	for _, args := range [][]string{
		{"run", "del-wrong-client", "--seed", "7", "--json"},
		{"run", "gc-pause-beyond-ttl"},
		{"run", "del-wrong-client", "-test.v"},
		{"list"},
		{"bogus"},
	} {
		code, out, stderr := runBinary(t, args...)
		wantCode, wantOut, wantErr := runCLI(t, args...)
		if code != wantCode || out != wantOut || stderr != wantErr {
			t.Errorf("%v: binary exit %d, stdout %d bytes, stderr %q; in process exit %d, stdout %d bytes, stderr %q",
				args, code, len(out), stderr, wantCode, len(wantOut), wantErr)
		}
		for _, chatter := range []string{"PASS\n", "FAIL\n", "--- FAIL", "=== RUN"} {
			if strings.Contains(out+stderr, chatter) {
				t.Errorf("%v: testing's %q in the output", args, chatter)
			}
		}
	}
	_, out, _ := runBinary(t, "run", "del-wrong-client", "--json")
	var v struct{ Scenario string }
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Scenario != "del-wrong-client" {
		t.Fatalf("--json stdout is not one JSON object (%v): %.200q", err, out)
	}
}
