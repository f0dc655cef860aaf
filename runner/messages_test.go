package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

// Issue 32, item 8: a typo in a fixed-choice setting is answered with the
// word it meant, and a range bounded only by the integer type says so
// instead of printing 9223372036854775807.
func TestFixedChoicesSuggestAndRangesReadAsChosen(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"algorithm: mysql-get-lock\nparams: {route: spred}\n", `params.route: expected spread or first, found "spred" (did you mean spread?)`},
		{"algorithm: mysql-get-lock\nparams: {connection: pined}\n", `params.connection: expected pool or pinned, found "pined" (did you mean pinned?)`},
		{"algorithm: pg-advisory-session\nparams: {pooler: sesion}\n", `params.pooler: expected none, session or transaction, found "sesion" (did you mean session?)`},
		{"algorithm: redis-semaphore\nnodes: [A]\nparams: {clock: sever}\n", `params.clock: expected client or server, found "sever" (did you mean server?)`},
		{"algorithm: set-nx-px-lua\nnodes: [A]\nclients: {count: 2, clock: wal}\n", `clients.clock: expected monotonic or wall, found "wal" (did you mean wall?)`},
		{"algorithm: set-nx-px-lua\nnodes: [A]\nclients: {count: -1}\n", `clients.count: expected a whole number >= 0, found "-1"`},
		{"algorithm: mysql-get-lock\nfaults: [{kind: failover, target: db1, at: 1s}]\n", `faults[0].target: the mysql backend has no replica or standby for a failover to promote`},
	} {
		path := filepath.Join(dir, "x.yaml")
		os.WriteFile(path, []byte("id: x\nttl: 5s\nduration: 5s\n"+c.text), 0o644)
		_, err := scenarios.Load(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.text, err, c.want)
		}
	}
}

// Issue 32, item 8: a retired zk-simple file with zk_servers: 3 ran three
// servers under a warning that said "one-server ensemble (zk1)".
func TestRetiredZKWarningNamesTheEnsembleItRuns(t *testing.T) {
	sc, err := scenarios.Parse("z.yaml", []byte("id: z\nalgorithm: zk-simple\nttl: 5s\nclients: {count: 2}\nparams: {zk_servers: \"3\"}\nduration: 5s\n"))
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, w := range sc.Warnings {
		text = append(text, w.Error())
	}
	all := strings.Join(text, "\n")
	if !strings.Contains(all, "running gozk-simple, the same recipe on the real go-zookeeper client, on the 3-server ensemble params.zk_servers asks for (zk1..zk3)") || strings.Contains(all, "one-server") {
		t.Fatalf("warnings:\n%s", all)
	}
}

// Issue 32, item 8: a second failover of a standby already promoted was
// not warned about as changing nothing.
func TestSecondFailoverOfAPromotedStandbyChangesNothing(t *testing.T) {
	sc, err := scenarios.Parse("f.yaml", []byte("id: f\nalgorithm: pg-advisory-session\nttl: 5s\nclients: {count: 2, cycles: 5, work: 1s}\nparams: {standby: \"true\"}\n"+
		"faults: [{kind: failover, target: db2, at: 1s}, {kind: failover, target: db2, at: 2s}]\nduration: 10s\n"))
	if err != nil {
		t.Fatal(err)
	}
	bubblehost.Bind(t)
	res, err := Run(sc, sc.Seed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "faults[1] (failover) changed nothing: db2 was the primary already (an earlier failover promoted it)"
	if !slices.Contains(res.Warnings, want) || slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.HasPrefix(w, "faults[0]") }) {
		t.Fatalf("warnings %q; want %q", res.Warnings, want)
	}
}

// Issue 32: a scenario path that is a named pipe nobody writes to held the
// open for ever; it now reads as empty and is refused at once.
func TestLoadOfAFIFOWithoutAWriterDoesNotHang(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe.yaml")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := scenarios.Load(path); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "empty file") {
			t.Fatalf("err %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load of a FIFO without a writer hangs")
	}
}
