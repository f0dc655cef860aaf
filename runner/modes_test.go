package runner

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
)

// A client's hold mode and the semaphore's permits are checked before
// anything runs: one line naming file:line:col and the field, what was
// expected, and a did-you-mean for a near miss.
func TestBadModeAndPermits(t *testing.T) {
	for _, c := range []struct{ name, to, want string }{
		{"mode typo", "clients: {count: 2, cycles: 2, mode: raed}", `x.yaml:7:38: clients.mode: expected read or write, found "raed" (did you mean read?)`},
		{"mode of one client", "clients: {count: 2, cycles: 2, each: {c2: {mode: writer}}}", `clients.each.c2.mode: expected read or write, found "writer" (did you mean write?)`},
		{"negative permits", "clients: {count: 2, cycles: 2, permits: -1}", `x.yaml:7:41: clients.permits: expected a whole number >= 0, found "-1"`},
		{"more permits than clients may be", "clients: {count: 2, cycles: 2, permits: 100000000}", `clients.permits: expected a number of semaphore permits between 1 and`},
		{"permits not a number", "clients: {count: 2, cycles: 2, permits: two}", `clients.permits`},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := strings.Replace(base, "clients: {count: 2, cycles: 2}", c.to, 1)
			_, err := scenarios.Parse("x.yaml", []byte(data))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("error:\n%v\nwant one line containing:\n%s", err, c.want)
			}
		})
	}
	// Each is accepted by an algorithm that reads it (on a mutex both are
	// refused: primitive_fields_test.go).
	rw := strings.Replace(base, "clients: {count: 2, cycles: 2}", "clients: {count: 2, cycles: 2, mode: read, each: {c1: {mode: write}}}", 1)
	sc, err := scenarios.Parse("x.yaml", []byte(strings.Replace(rw, "set-nx-px-lua", "redis-rwlock", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if sc.ModeOf("c1") != scenarios.ModeWrite || sc.ModeOf("c2") != scenarios.ModeRead {
		t.Fatalf("modes c1 %q c2 %q", sc.ModeOf("c1"), sc.ModeOf("c2"))
	}
	sem := strings.Replace(base, "clients: {count: 2, cycles: 2}", "clients: {count: 2, cycles: 2, permits: 2}", 1)
	sc, err = scenarios.Parse("x.yaml", []byte(strings.Replace(sem, "set-nx-px-lua", "redis-semaphore", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Clients.Permits != 2 {
		t.Fatalf("permits %d", sc.Clients.Permits)
	}
}

// The semaphore and reader-writer scenarios put their declared modes and
// permits into the history the checker judges, and the semaphore's witness
// names permits+1 holders.
func TestSemaphoreAndReadWriteHistories(t *testing.T) {
	sc, err := scenarios.Get("semaphore-clock-skew")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Report.Witness.MutualExclusion
	if o == nil || len(o.Holders) != 3 || o.Permits != 2 {
		t.Fatalf("witness %v", o)
	}
	sc, err = scenarios.Get("rwlock-writer-starvation")
	if err != nil {
		t.Fatal(err)
	}
	res, err = Run(sc, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range res.History.Intervals {
		if want := map[bool]string{true: scenarios.ModeWrite, false: scenarios.ModeRead}[iv.Client == "c4"]; iv.Mode != want {
			t.Fatalf("%s's hold has mode %q, want %q", iv.Client, iv.Mode, want)
		}
	}
	if s := res.Report.Witness.Starvation; s == nil || s.Writer != "c4" {
		t.Fatalf("starvation witness %v", s)
	}
}
