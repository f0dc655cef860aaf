package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Issue 32, item 7: 'work' in run --json was not a function of the seed
// and inputs (258670 or 258675 between identical runs of a 1000-client,
// two-node MySQL scenario with a crash; the trace digest the same): the
// driver's handshake carried the process id (sim/mysqlnode's
// declineConnectAttrs, TestClientSendsNothingOfItsProcess). The
// reproducer runs as two processes, at GOMAXPROCS 1 and 2, and both give
// the same work and digest; the size runs with LOCKLAB_DEEP=1.
func TestWorkIsAFunctionOfTheSeed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	clients, cycles, duration := 40, 2, "6s"
	if os.Getenv("LOCKLAB_DEEP") == "1" {
		clients, cycles, duration = 1000, 1, "10s"
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "w.yaml")
	text := fmt.Sprintf(`id: w
algorithm: mysql-get-lock
ttl: 10s
wait: {delay: 100ms}
network: {latency: 1ms}
params: {connection: pinned, nodes: "2", route: spread}
clients: {count: %d, cycles: %d, work: 100ms}
faults:
  - {kind: node-crash, at: 2s, target: db1, restart_after: 1s}
duration: %s
`, clients, cycles, duration)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := locklabBinary(t)
	var runs []runOutput
	for _, procs := range []string{"1", "2"} {
		cmd := exec.Command(bin, "run", file, "--json")
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+procs)
		out, err := cmd.Output()
		var o runOutput
		if jerr := json.Unmarshal(out, &o); jerr != nil {
			t.Fatalf("GOMAXPROCS=%s: %v %v\n%s", procs, err, jerr, out)
		}
		runs = append(runs, o)
	}
	if runs[0].Work != runs[1].Work || runs[0].TraceSHA256 != runs[1].TraceSHA256 || runs[0].Work == 0 {
		t.Fatalf("work %d and %d, digests %s and %s", runs[0].Work, runs[1].Work, runs[0].TraceSHA256, runs[1].TraceSHA256)
	}
}
