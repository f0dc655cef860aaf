package runner

// The SQL Server backend (issue 35): go-mssqldb, unmodified, against the
// simulated server on the simulated network.

import (
	"runtime"
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
	"github.com/locklab/locklab/sim/event"
)

func mssqlIDs(t *testing.T) []*scenarios.Scenario {
	t.Helper()
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var out []*scenarios.Scenario
	for _, s := range all {
		if strings.HasPrefix(s.ID, "mssql-") {
			out = append(out, s)
		}
	}
	if len(out) < 6 {
		t.Fatalf("%d SQL Server scenarios in the catalogue, want at least 6", len(out))
	}
	return out
}

// Same seed, same trace: twice, and at GOMAXPROCS 1 and 4.
func TestMSSQLSameTraceAcrossGOMAXPROCS(t *testing.T) {
	bubblehost.Bind(t)
	for _, s := range mssqlIDs(t) {
		prev := runtime.GOMAXPROCS(1)
		one := mustRun(t, s, 7, Options{}).TraceSHA256
		runtime.GOMAXPROCS(4)
		four := mustRun(t, s, 7, Options{}).TraceSHA256
		again := mustRun(t, s, 7, Options{}).TraceSHA256
		runtime.GOMAXPROCS(prev)
		if one != four || four != again {
			t.Errorf("%s seed 7: GOMAXPROCS=1 %s, =4 %s, again %s", s.ID, one, four, again)
		}
	}
}

// The pooled session lock: c2's sp_getapplock goes out on c1's pooled
// connection marked with the reset-connection flag and is granted while
// c1 holds; c1's release then fails. Pinned, no request under the lock
// carries the flag and no release fails.
func TestMSSQLPooledResetWitness(t *testing.T) {
	bubblehost.Bind(t)
	r := mustRun(t, mustGet(t, "mssql-pooled-session-reset"), 1, Options{KeepTrace: true})
	me := r.Report.Witness.MutualExclusion
	if me == nil || me.First.Client != "c1" || me.Second.Client != "c2" {
		t.Fatalf("witness %+v, want c1 and c2", me)
	}
	var resetGet bool
	for _, e := range eventsOf(r, event.DBSegmentReceived) {
		if e.Op == "sp_getapplock" && e.At > me.From-50e6 && e.At <= me.From && strings.HasPrefix(e.Command, "[reset connection]") && e.Conn == "app#1>db1" {
			resetGet = true
		}
	}
	if !resetGet {
		t.Fatal("c2's grant did not follow an sp_getapplock carrying the reset flag on the pool's one connection")
	}
	fails := eventsOf(r, event.ReleaseFailed)
	if len(fails) == 0 || fails[0].Client != "c1" || !strings.Contains(fails[0].Reason, "not currently held") {
		t.Fatalf("release failures %+v, want c1's 'not currently held'", fails)
	}

	fixed := mustRun(t, mustGet(t, "mssql-pooled-session-reset-fixed"), 1, Options{KeepTrace: true})
	if f := eventsOf(fixed, event.ReleaseFailed); len(f) != 0 {
		t.Fatalf("pinned: release failures %+v", f)
	}
}

// The failover: c2's grant comes from db2, after the promotion.
func TestMSSQLFailoverWitness(t *testing.T) {
	bubblehost.Bind(t)
	r := mustRun(t, mustGet(t, "mssql-ag-failover"), 1, Options{KeepTrace: true})
	promoted := eventsOf(r, event.DBPromoted)
	if len(promoted) != 1 || promoted[0].Node != "db2" {
		t.Fatalf("promotions %+v", promoted)
	}
	me := r.Report.Witness.MutualExclusion
	if me == nil || me.Second.Client != "c2" || me.From < promoted[0].At {
		t.Fatalf("witness %+v; want c2 holding after the promotion at %v", me, promoted[0].At)
	}
	var onDB2 bool
	for _, e := range eventsOf(r, event.DBSegmentReceived) {
		if e.Op == "sp_getapplock" && e.Node == "db2" && e.Client == "c2" && e.At <= me.From {
			onDB2 = true
		}
	}
	if !onDB2 {
		t.Fatal("c2's granted sp_getapplock did not run on db2")
	}
}

// Params are checked before anything runs, naming the file, line and
// field.
func TestMSSQLParamsChecked(t *testing.T) {
	data := `id: x
algorithm: mssql-applock-session
ttl: 10s
params: {connection: pool, confirm: 200ms}
clients: {count: 2}
duration: 10s
`
	_, err := scenarios.Parse("x.yaml", []byte(data))
	if err == nil || !strings.Contains(err.Error(), "x.yaml:4:") || !strings.Contains(err.Error(), "params.confirm: the check asks APPLOCK_MODE on the lock's own session") {
		t.Fatalf("confirm through a pool: %v", err)
	}
	bad := strings.Replace(data, "{connection: pool, confirm: 200ms}", "{lock_timeout: \"-2\"}", 1)
	if _, err := scenarios.Parse("x.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "params.lock_timeout") {
		t.Fatalf("lock_timeout -2: %v", err)
	}
	typo := strings.Replace(data, "{connection: pool, confirm: 200ms}", "{conection: pinned}", 1)
	if _, err := scenarios.Parse("x.yaml", []byte(typo)); err == nil || !strings.Contains(err.Error(), "did you mean connection?") {
		t.Fatalf("typo: %v", err)
	}
}
