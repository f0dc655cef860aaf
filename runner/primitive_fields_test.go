package runner

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// Every semaphore and reader-writer setting is refused on an algorithm
// that does not read it, one line naming the field and the algorithms that
// read it (issue 31 item 2): before, permits: 2 on a mutex judged a
// 2-permit semaphore and mode: read judged shared reads, with no word.
func TestPrimitiveFieldsRefusedOnAMutex(t *testing.T) {
	semaphores := strings.Join(algorithms.Readers(algorithms.ParamPermits), ", ")
	rwlocks := strings.Join(algorithms.Readers(algorithms.ParamMode), ", ")
	for _, c := range []struct{ name, to, want string }{
		{"permits", "clients: {count: 2, cycles: 2, permits: 2}", "x.yaml:7:41: clients.permits: set-nx-px-lua does not read permits (it is not a counting semaphore), so the run would be judged as another primitive than the one that ran; expected no permits, or an algorithm that reads it: " + semaphores},
		{"permits 1", "clients: {count: 2, cycles: 2, permits: 1}", "x.yaml:7:41: clients.permits: set-nx-px-lua does not read permits"},
		{"mode read", "clients: {count: 2, cycles: 2, mode: read}", "x.yaml:7:38: clients.mode: set-nx-px-lua does not read mode (it is not a reader-writer lock), so the run would be judged as another primitive than the one that ran; expected no mode, or an algorithm that reads it: " + rwlocks},
		{"mode write", "clients: {count: 2, cycles: 2, mode: write}", "x.yaml:7:38: clients.mode: set-nx-px-lua does not read mode"},
		{"mode of one client", "clients: {count: 2, cycles: 2, each: {c2: {mode: read}}}", "x.yaml:7:50: clients.each.c2.mode: set-nx-px-lua does not read mode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := strings.Replace(base, "clients: {count: 2, cycles: 2}", c.to, 1)
			_, err := scenarios.Parse("x.yaml", []byte(data))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("error:\n%v\nwant one line containing:\n%s", err, c.want)
			}
		})
	}
	if !strings.Contains(semaphores, "redis-semaphore") || !strings.Contains(rwlocks, "redis-rwlock") || strings.Contains(semaphores+rwlocks, "set-nx-px-lua") {
		t.Fatalf("readers of permits: %s; of mode: %s", semaphores, rwlocks)
	}
}

// Every listed algorithm that is not a semaphore refuses permits, and every
// one that is not a reader-writer lock refuses a mode, whatever its
// backend: each is tried in a catalogue scenario of its own.
func TestPrimitiveFieldsRefusedForEveryAlgorithm(t *testing.T) {
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, name := range algorithms.Names() {
		info, _ := algorithms.Lookup(name)
		// A catalogue scenario of the algorithm, else one of its backend
		// with the algorithm swapped in (params and modes dropped, so that
		// only the field under test can be refused).
		var sc *scenarios.Scenario
		for _, s := range all {
			if s.Algorithm == name {
				sc = s
				break
			}
		}
		for _, s := range all {
			if o, _ := algorithms.Lookup(s.Algorithm); sc == nil && o.Backend == info.Backend && o.Primitive == "" && len(s.Compare) == 0 {
				sc = s.Clone()
				sc.Algorithm, sc.Params = name, nil
			}
		}
		if sc == nil {
			t.Errorf("%s: no catalogue scenario of its backend %s", name, info.Backend)
			continue
		}
		if info.Reads(algorithms.ParamMode) {
			sc = sc.Clone()
			sc.Clients.Mode = ""
			for c, o := range sc.Clients.Each {
				o.Mode = nil
				sc.Clients.Each[c] = o
			}
		}
		tried++
		if !info.Reads(algorithms.ParamPermits) {
			c := sc.Clone()
			c.Clients.Permits = 2
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "clients.permits: "+name+" does not read permits") {
				t.Errorf("%s (from %s) with permits 2: %v", name, sc.ID, err)
			}
		}
		if !info.Reads(algorithms.ParamMode) {
			c := sc.Clone()
			c.Clients.Mode = scenarios.ModeRead
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "clients.mode: "+name+" does not read mode") {
				t.Errorf("%s (from %s) with mode read: %v", name, sc.ID, err)
			}
		}
		if err := sc.Clone().Validate(); err != nil {
			t.Errorf("%s as %s: %v", sc.ID, name, err)
		}
	}
	if tried != len(algorithms.Names()) {
		t.Fatalf("tried %d of %d algorithms", tried, len(algorithms.Names()))
	}
}

// The three scenarios the issue names: one line of permits: 2 turned
// violated/violated into ok/ok/ok; it is now refused at its place.
func TestPermitsOnCatalogueMutexesRefused(t *testing.T) {
	for _, c := range []struct{ id, alg string }{
		{"pgbouncer-transaction-pooling", "pg-advisory-session"},
		{"mysql-galera-get-lock", "mysql-get-lock"},
		{"zk-ensemble-curator-604", "gozk-queue-naive"},
	} {
		t.Run(c.id, func(t *testing.T) {
			data, err := os.ReadFile("../scenarios/catalog/" + c.id + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Replace(string(data), "\nclients:\n", "\nclients:\n  permits: 2\n", 1)
			line := strings.Count(text[:strings.Index(text, "  permits: 2")], "\n") + 1
			_, err = scenarios.Parse("x.yaml", []byte(text))
			want := "x.yaml:" + strconv.Itoa(line) + ":12: clients.permits: " + c.alg + " does not read permits"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error:\n%v\nwant:\n%s", err, want)
			}
		})
	}
}

// A mutex compared inside a semaphore scenario is judged as a mutex: the
// semaphore's two permits do not carry over to it.
func TestCompareJudgesAMutexAsAMutex(t *testing.T) {
	sc, err := scenarios.Parse("x.yaml", []byte(`id: cmp
algorithm: redis-semaphore
compare: [set-nx-px-del]
ttl: 10s
nodes: [A]
clients: {count: 2, cycles: 1, permits: 2, work: 3s, each: {c2: {start: 1s}}}
duration: 30s
faults:
  - kind: pause
    target: c1
    at: 100ms
    duration: 15s
`))
	if err != nil {
		t.Fatal(err)
	}
	if c := sc.AsCompared("set-nx-px-del"); c.Clients.Permits != 0 || c.Algorithm != "set-nx-px-del" || len(c.Compare) != 0 {
		t.Fatalf("compared scenario: algorithm %s, permits %d, compare %v", c.Algorithm, c.Clients.Permits, c.Compare)
	}
	res, cmp, err := RunCompared(sc, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Verdict.MutualExclusion != checker.OK {
		t.Fatalf("two holders of two permits: %s", res.Report.Verdict.MutualExclusion)
	}
	if got := cmp[0].Verdict.MutualExclusion; got != checker.Violated {
		t.Fatalf("set-nx-px-del compared: mutual exclusion %s, want violated (a paused holder's key expires, c2 takes it)", got)
	}
}
