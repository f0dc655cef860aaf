package runner

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
	"github.com/locklab/locklab/sim/event"
)

// postgresIDs are the catalogue's Postgres scenarios.
func postgresIDs(t *testing.T) []*scenarios.Scenario {
	t.Helper()
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var out []*scenarios.Scenario
	for _, s := range all {
		if strings.HasPrefix(s.ID, "pg-") || strings.HasPrefix(s.ID, "pgbouncer-") {
			out = append(out, s)
		}
	}
	if len(out) < 2 {
		t.Fatalf("%d Postgres scenarios in the catalogue", len(out))
	}
	return out
}

func eventsOf(r *Result, k event.Kind) []event.Event {
	var out []event.Event
	for _, e := range r.Events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// Behind PgBouncer in transaction mode, a second client's
// pg_try_advisory_lock runs on the backend that holds c1's session lock
// and is granted (two holders); an unlock then runs on the other backend
// and returns false, and the lock stays with a pooled connection: c5,
// connecting directly, never gets it.
func TestPgbouncerTransactionPoolingWitness(t *testing.T) {
	bubblehost.Bind(t)
	r := mustRun(t, mustGet(t, "pgbouncer-transaction-pooling"), 7, Options{KeepTrace: true})
	if !r.Matches() {
		t.Fatalf("verdict %+v, want %+v", r.Report.Verdict, r.Scenario.Expect)
	}
	// Every grant on db1 went to the pooler's first server connection.
	granted := 0
	for _, e := range eventsOf(r, event.DBLockGranted) {
		if e.Node != "db1" {
			continue
		}
		granted++
		if e.Conn != "pgbouncer#1>db1" {
			t.Errorf("grant at %v on %s, want every grant on pgbouncer#1>db1 (reentrant)", e.At, e.Conn)
		}
	}
	if granted < 2 {
		t.Fatalf("%d grants on db1, want the lock granted again to the same backend", granted)
	}
	notHeld := 0
	for _, e := range eventsOf(r, event.DBUnlockNotHeld) {
		if e.Node == "db1" && e.Conn == "pgbouncer#2>db1" {
			notHeld++
		}
	}
	if notHeld == 0 {
		t.Fatal("no unlock ran on the backend that did not hold the lock")
	}
	failed := eventsOf(r, event.ReleaseFailed)
	if len(failed) == 0 || !strings.Contains(failed[0].Reason, "returned false") {
		t.Fatalf("release failures %+v, want pg_advisory_unlock returning false", failed)
	}
	for _, e := range eventsOf(r, event.HoldBegan) {
		if e.Client == "c5" {
			t.Fatalf("c5 got the lock at %v; it should stay stranded on the pooled backend", e.At)
		}
	}
	if l := r.Report.Witness.Liveness; l == nil || strings.Join(l.Waiting, ",") != "c5" || l.From != r.Scenario.Clients.Each["c5"].Start.Min {
		t.Fatalf("liveness witness %+v, want c5 waiting for the stranded lock from its start", l)
	}
}

// The catalogue's Postgres scenarios hold for several seeds.
func TestPostgresScenariosInTheCatalogue(t *testing.T) {
	bubblehost.Bind(t)
	for _, s := range postgresIDs(t) {
		t.Run(s.ID, func(t *testing.T) {
			for _, seed := range []uint64{s.Seed, 1, 2, 3, 7} {
				r := mustRun(t, s, seed, Options{})
				if !r.Matches() {
					t.Errorf("seed %d: verdict %+v, expected %+v; witness %+v", seed, r.Report.Verdict, s.Expect, r.Report.Witness)
				}
			}
		})
	}
}

// One seed, one trace: at GOMAXPROCS 1 and 4, twice (and under -race when
// the suite runs with it); another seed gives another trace.
func TestPostgresSameSeedSameTrace(t *testing.T) {
	bubblehost.Bind(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, s := range postgresIDs(t) {
		runtime.GOMAXPROCS(1)
		one := mustRun(t, s, 7, Options{}).TraceSHA256
		runtime.GOMAXPROCS(4)
		four := mustRun(t, s, 7, Options{}).TraceSHA256
		again := mustRun(t, s, 7, Options{}).TraceSHA256
		if one != four || four != again {
			t.Errorf("%s seed 7: GOMAXPROCS=1 %s, GOMAXPROCS=4 %s, again %s", s.ID, one, four, again)
		}
		if other := mustRun(t, s, 8, Options{}).TraceSHA256; other == one {
			t.Errorf("%s: seeds 7 and 8 gave the same trace", s.ID)
		}
	}
}

// Bad Postgres params and fault names are refused with the field and a
// did-you-mean.
func TestPostgresScenarioErrors(t *testing.T) {
	base := `id: x
title: x
algorithm: pg-advisory-session
ttl: 10s
clients: {count: 2}
`
	for _, tc := range []struct{ yaml, want string }{
		{base + "params: {pooler: transactions}\n", `x.yaml:6:18: params.pooler: expected none, session or transaction, found "transactions"`},
		{base + "params: {direct_clients: c3}\n", `unknown client "c3"; expected one of c1, c2`},
		{base + "params: {direct_clients: c}\n", `(did you mean c1?)`},
		{base + "params: {keepalive_count: \"0\"}\n", `params.keepalive_count: expected a whole number between 1 and 100`},
		{base + "faults: [{kind: drop, op: pg_advisory_unlok, at: 1s}]\n", `(did you mean PG_ADVISORY_UNLOCK?)`},
		{base + "faults: [{kind: node-crash, target: db3, at: 1s}]\n", `unknown node "db3"`},
		{base + "faults: [{kind: failover, target: db1, at: 1s}]\n", `faults[0].target: this scenario has no standby to promote; set params.standby: true for a postgres standby (db2) that a failover promotes`},
		{base + "faults: [{kind: node-crash, target: db1, at: 1s, restart_after: 1s, persistence: always}]\n", `db1 is a database server or pooler: a restart keeps its tables and never its advisory locks`},
		{base + "params: {standby: \"true\"}\nfaults: [{kind: failover, target: db1, at: 1s}]\n", `expected one of db2`},
	} {
		s, err := scenarios.Parse("x.yaml", []byte(tc.yaml))
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %q", tc.yaml, err, tc.want)
		}
		var fe *scenarios.FieldError
		var errs scenarios.Errors
		if err != nil && !errors.As(err, &fe) && !errors.As(err, &errs) {
			t.Errorf("%q: error %T is not a field error", tc.yaml, err)
		}
	}
}

// A crash of the pooler's process resets its server connections (its
// host's TCP stack is alive), so db1 ends their backends at once and the
// session lock c1 took through the pooler is freed: c2, dialling db1
// directly, gets it while c1 still believes it holds — the pooler's
// crash is the holder's session's end.
func TestPoolerCrashEndsItsServerSessions(t *testing.T) {
	bubblehost.Bind(t)
	src := `id: pooler-crash
title: pooler crash
algorithm: pg-advisory-session
ttl: 10s
wait: {delay: 200ms}
params: {pooler: session, direct_clients: c2}
clients:
  count: 2
  cycles: 1
  work: 1s
  each:
    c1: {start: 0s, work: 5s}
    c2: {start: 100ms}
duration: 20s
faults:
  - kind: node-crash
    target: pgbouncer
    at: 1s
expect: {mutual_exclusion: violated}
`
	sc, err := scenarios.Parse("pooler-crash.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, sc, 1, Options{KeepTrace: true})
	if !r.Matches() {
		t.Fatalf("verdict %+v, want mutual exclusion violated", r.Report.Verdict)
	}
	var ended []string
	for _, e := range eventsOf(r, event.DBSessionEnded) {
		ended = append(ended, e.Conn+" "+e.Reason)
	}
	if !slices.Contains(ended, "pgbouncer#1>db1 the client's connection was reset") {
		t.Fatalf("sessions ended %v, want the pooler's server connection's, reset by the pooler's host", ended)
	}
	granted := eventsOf(r, event.DBLockGranted)
	if len(granted) != 2 || granted[1].Conn != "c2#1>db1" || granted[1].At < 1e9 {
		t.Fatalf("grants %+v, want c2's after the crash at 1s", granted)
	}
}
