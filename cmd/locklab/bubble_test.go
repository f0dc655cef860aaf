package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// The catalogue's scenarios on the real go-zookeeper client run in the
// built binary, inside the bubble it hosts: the verdict and exit status
// are the scenario's, the same seed gives the same bytes, and every trace
// digest is the one the test suite pins (runner/testdata/golden-traces.txt,
// computed in `go test` with a bound *testing.T), so the command and the
// tests run the very same simulation — go-zookeeper's random node names
// included.
func TestBinaryRunsRealClientScenarios(t *testing.T) {
	code, out, stderr := runBinary(t, "run", "zk-ensemble-minority-partition")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"\nalgorithm gozk-lock (go-zookeeper/zk's own Lock, unmodified, on the real client against a simulated ensemble) · 2 clients · zookeeper-ensemble · seed 1 ·",
		"\n  mutual exclusion  VIOLATED  violated  ✓\n  resource          VIOLATED  violated  ✓\n  liveness          ok        ok        ✓\n",
		"\n  mutual exclusion: c1 held [0.036s, 15.039s) (release) and c2 held [6.006s, 7.009s) (release): both held during [6.006s, 7.009s)\n",
		"\nResult: the run matches the scenario's expectation.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// In process (the test's *testing.T hosting the bubble) the command
	// prints the same.
	if c, o, e := runCLI(t, "run", "zk-ensemble-minority-partition"); c != code || o != out || e != stderr {
		t.Errorf("in process: exit %d, stderr %q, stdout differs: %v", c, e, o != out)
	}

	golden := map[string]string{}
	data, err := os.ReadFile(filepath.Join("..", "..", "runner", "testdata", "golden-traces.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			golden[f[0]+" "+f[1]] = f[2]
		}
	}
	_, listing, _ := runBinary(t, "list", "--json")
	var list []struct{ ID, Algorithm string }
	if err := json.Unmarshal([]byte(listing), &list); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sc := range list {
		if !strings.HasPrefix(sc.Algorithm, "gozk-") {
			continue
		}
		n++
		for _, seed := range []string{"1", "7"} {
			code, first, stderr := runBinary(t, "run", sc.ID, "--seed", seed, "--json")
			_, second, _ := runBinary(t, "run", sc.ID, "--seed", seed, "--json")
			var got struct {
				TraceSHA256        string `json:"trace_sha256"`
				MatchesExpectation bool   `json:"matches_expectation"`
			}
			if err := json.Unmarshal([]byte(first), &got); err != nil {
				t.Errorf("%s seed %s: exit %d, not one JSON object (%v); stderr %s", sc.ID, seed, code, err, stderr)
				continue
			}
			if first != second {
				t.Errorf("%s seed %s: two runs of the binary printed different JSON", sc.ID, seed)
			}
			// The suite keeps no golden digest for its 101-client herds
			// (TestGoldenTraces leaves them out); the two runs above
			// still agree with each other.
			if want, ok := golden[sc.ID+" "+seed]; ok && got.TraceSHA256 != want {
				t.Errorf("%s seed %s: trace digest %s, the test suite's golden %q", sc.ID, seed, got.TraceSHA256, want)
			}
			if seed == "1" && (code != 0 || !got.MatchesExpectation) {
				t.Errorf("%s seed 1: exit %d, matches_expectation %v", sc.ID, code, got.MatchesExpectation)
			}
		}
	}
	if n < 2 {
		t.Fatalf("the catalogue has %d scenarios on the go-zookeeper client; expected the ensemble ones", n)
	}
}
