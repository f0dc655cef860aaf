package explore

import (
	"testing"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/bubblehost"
	"github.com/locklab/locklab/sim/event"
)

// A holder that crashes keeps a ZooKeeper lock until the leader expires
// its session, rounded up to a tick. The exploration setup makes that the
// TTL every algorithm is measured against (2 s session, 500 ms ticks), so
// crashes alone never break the 2×TTL+1s liveness bound of a lock that
// recovers. With ZooKeeper's 2 s tick the session was clamped to 4 s and
// expired up to 6.25 s after the crash, and this exploration reported the
// lock's designed behaviour as a liveness violation (run 7 of seed 3).
func TestExploreEnsembleCrashesWithinTheBound(t *testing.T) {
	bubblehost.Bind(t)
	for _, alg := range []string{"gozk-lock", "gozk-queue"} {
		res, err := Explore(Options{Algorithm: alg, Classes: []faults.Class{"crash"}, Runs: 40, Seed: 3, Workers: 1})
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		for _, f := range res.Findings {
			t.Errorf("%s: crashes alone gave a violation in run %d: %s %v", alg, f.Run, f.Property, f.Result.Report.Witness)
		}
		if res.Runs != 40 {
			t.Errorf("%s: %d runs, want 40", alg, res.Runs)
		}
	}
}

// A holder whose host crashes keeps its session advisory lock until the
// server's keepalive gives up on it (Linux's defaults: over two hours).
// The exploration setup sets keepalive to free it within the TTL, so
// crashes alone never break the 2×TTL+1s liveness bound; with the Linux
// defaults the first exploration run with a crashed holder reported the
// lock unavailable for the rest of the run.
func TestExplorePostgresCrashesWithinTheBound(t *testing.T) {
	bubblehost.Bind(t)
	for _, alg := range []string{"pg-advisory-session", "pg-advisory-xact"} {
		res, err := Explore(Options{Algorithm: alg, Classes: []faults.Class{"crash"}, Runs: 40, Seed: 1, Workers: 1})
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		for _, f := range res.Findings {
			t.Errorf("%s: crashes alone gave a violation in run %d: %s %v", alg, f.Run, f.Property, f.Result.Report.Witness)
		}
		if res.Runs != 40 {
			t.Errorf("%s: %d runs, want 40", alg, res.Runs)
		}
	}
	// A restart of db1 loses every advisory lock: the exploration finds
	// two holders.
	res, err := Explore(Options{Algorithm: "pg-advisory-session", Classes: []faults.Class{"restart"}, Runs: 100, Seed: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) == 0 || res.Findings[0].Property != "mutual_exclusion" {
		t.Fatalf("restarts: findings %+v, want two holders after db1 restarts without its locks", res.Findings)
	}
}

// explore finds the stale-lock takeover blind: lockfile-pid on one host,
// crashes only, and two waiters who both judge the crashed holder's file
// stale and both take it.
func TestExploreFindsTheStaleTakeoverRace(t *testing.T) {
	res, err := Explore(Options{Algorithm: "lockfile-pid", Classes: []faults.Class{faults.ClassCrash}, Runs: 400, Seed: 1, Workers: 1, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) == 0 || res.Findings[0].Property != "mutual_exclusion" {
		t.Fatalf("findings %+v, want two holders after a crashed holder's file was taken over", res.Findings)
	}
	// flock has no stale state: the same crashes never give two holders.
	ok, err := Explore(Options{Algorithm: "flock", Classes: []faults.Class{faults.ClassCrash}, Runs: 200, Seed: 1, Workers: 1, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ok.Findings {
		t.Errorf("flock × crash: %s in run %d", f.Property, f.Run)
	}
}

// explore finds the NFSv4 lease expiry blind: fcntl over an NFS mount,
// partitions only; a partitioned holder's lease ends on the server and
// another client is granted the lock while the first writes on. The lease
// is 500 ms, below the drawn work (up to 1.7 s), as a 90 s lease is below
// a long job: a partition of the holder longer than the lease is enough.
func TestExploreFindsTheLeaseExpiry(t *testing.T) {
	base, err := matrix.Base("fcntl")
	if err != nil {
		t.Fatal(err)
	}
	base.Params = map[string]string{"fs": "nfs", "lease": "500ms", "grace": "500ms", "timeo": "200ms"}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := Explore(Options{Algorithm: "fcntl", Base: base, Classes: []faults.Class{faults.ClassPartition}, Runs: 400, Seed: 1, Workers: 1, NoShrink: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) == 0 || res.Findings[0].Property != "mutual_exclusion" {
		t.Fatalf("findings %+v, want two holders after a partitioned client's lease ran out", res.Findings)
	}
	var expired bool
	f := res.Findings[0]
	r := mustRun(t, f.Scenario, f.Scenario.Seed, runner.Options{KeepTrace: true})
	for _, e := range eventsOf(r, event.FSLeaseExpired) {
		expired = expired || e.Count > 0
	}
	if !expired {
		t.Errorf("run %d: no lease expired with a lock; the violation is not the lease's", f.Run)
	}
}
