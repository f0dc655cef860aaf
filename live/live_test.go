package live

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// needServers skips without the servers sc needs, except under CI=true,
// where the live subset must run (.ci/run installs them).
func needServers(t *testing.T, sc *scenarios.Scenario) {
	t.Helper()
	if err := Installed(sc); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err.Error() + " (CI=true: failing instead of skipping)")
		}
		t.Skip(err.Error())
	}
}

// liveRun runs a catalogue scenario live with its own temporary directory
// (Options.TempDir), and checks that nothing is left behind: no server process, no
// directory.
func liveRun(t *testing.T, id string) *scenarios.Result {
	t.Helper()
	sc, err := scenarios.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	needServers(t, sc)
	// Not t.TempDir: its parents are private to root, and a Postgres run
	// as nobody must reach its directory.
	tmp, err := os.MkdirTemp("", "locklab-live-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(tmp, 0o755)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	res, err := Run(context.Background(), sc, Options{Seed: sc.Seed, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "locklab-live-*"))
	if len(left) > 0 {
		t.Errorf("live run left %v behind", left)
	}
	if out, _ := exec.Command("pgrep", "-f", tmp).Output(); len(out) > 0 {
		t.Errorf("live run left processes behind: %s", out)
	}
	return res
}

// The classic failures happen live as they do in the simulation: their
// margins are seconds (a 15 s pause past a 10 s TTL, a 10 s clock step, a
// partition past a 6 s session), far beyond what a loaded machine's
// scheduling can move; behind PgBouncer in transaction mode every try of
// the workers lands on the backend that holds the lock.
func TestLiveClassicFailures(t *testing.T) {
	for _, id := range []string{"gc-pause-beyond-ttl", "redlock-clock-jump", "zk-suspended-vs-lost", "pgbouncer-transaction-pooling"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			res := liveRun(t, id)
			v := res.Report.Verdict
			if v.MutualExclusion != checker.Violated || v.Resource != checker.Violated {
				t.Fatalf("live %s: %+v, want mutual exclusion and resource violated (history %+v)", id, v, res.History)
			}
			if w := res.Report.Witness.MutualExclusion; w == nil {
				t.Fatalf("live %s: no mutual-exclusion witness", id)
			}
			if len(res.Applied) != len(res.Scenario.Faults) {
				t.Fatalf("live %s: %d faults applied, the scenario has %d", id, len(res.Applied), len(res.Scenario.Faults))
			}
		})
	}
}

// A scenario with a part live mode cannot make is refused with every
// reason, before any server starts.
func TestLiveRefusesWhatItCannotMake(t *testing.T) {
	sc, err := scenarios.Load("failover-lost-replication")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), sc, Options{})
	var ne *NotExpressible
	if !errors.As(err, &ne) {
		t.Fatalf("got %v, want a NotExpressible refusal", err)
	}
	if !strings.Contains(err.Error(), "replicates from") || !strings.Contains(err.Error(), "failover") {
		t.Fatalf("refusal does not name the replica and the failover:\n%v", err)
	}
}
