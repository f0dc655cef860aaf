package matrix

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/pglock"
	"github.com/locklab/locklab/algorithms/zklock/gozk"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

func TestMatrixScenarioSetup(t *testing.T) {
	for _, name := range algorithms.Names() {
		sc, err := Base(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		info, _ := algorithms.Lookup(name)
		want := 1
		if info.Backend == gozk.Backend {
			// The ensemble's servers are zk1…zkN, not Redis nodes; its
			// session is the TTL, on a tick short enough to expire it in
			// time (see newMatrixScenario).
			want = 0
			if sc.Params["session_timeout"] != TTL.String() || sc.Params["tick_time"] != (TTL/4).String() {
				t.Errorf("%s: params %v, want session_timeout %v and tick_time %v", name, sc.Params, TTL, TTL/4)
			}
		}
		if info.Backend == pglock.Backend {
			// The database servers are db1 (and the pooler), not Redis
			// nodes; keepalive frees a silent holder's lock within the TTL.
			want = 0
			if sc.Params["keepalive_idle"] != (TTL / 2).String() {
				t.Errorf("%s: params %v, want keepalive_idle %v", name, sc.Params, TTL/2)
			}
		}
		if info.Backend == "redis" {
			want = max(info.MinNodes, 1)
			if info.MinNodes >= 3 {
				want = max(info.MinNodes, 5)
			}
		}
		if got := len(sc.Nodes); got != want {
			t.Errorf("%s: %d nodes, want %d", name, got, want)
		}
		if sc.Clients.Count != 3 || sc.Clients.Cycles != 2 || sc.TTL.D() != TTL || sc.Duration.D() != Duration {
			t.Errorf("%s: setup %+v", name, sc.Clients)
		}
		if len(sc.Faults) != 0 {
			t.Errorf("%s: base scenario has faults", name)
		}
		// The base scenario is a valid scenario file.
		data, err := sc.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := scenarios.Parse("base.yaml", data); err != nil {
			t.Errorf("%s: base scenario does not parse back: %v\n%s", name, err, data)
		}
	}
	if _, err := Base("no-such-lock"); err == nil || !strings.Contains(err.Error(), `unknown algorithm "no-such-lock"`) {
		t.Fatalf("error %v", err)
	}
}

func TestMatrixScheduleIsDeterministicAndValid(t *testing.T) {
	base, err := Base("set-nx-px-del")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range faults.Classes() {
		for i := 1; i <= 20; i++ {
			a, b := Schedule(base, c, i), Schedule(base, c, i)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s %d: two draws differ", c, i)
			}
			if len(a) == 0 {
				t.Fatalf("%s %d: empty schedule", c, i)
			}
			if err := a.Validate(base.Names()); err != nil {
				t.Fatalf("%s %d: %v", c, i, err)
			}
			if got := a.Classes(); !reflect.DeepEqual(got, []faults.Class{c}) {
				t.Fatalf("%s %d: classes %v", c, i, got)
			}
		}
	}
	// Different cells draw different schedules.
	other, _ := Base("set-nx-px-lua")
	if reflect.DeepEqual(Schedule(base, faults.ClassPause, 1), Schedule(other, faults.ClassPause, 1)) {
		t.Error("two algorithms got the same schedule for the same seed")
	}
}

func matrixJSON(t *testing.T, r *Result) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMatrixDoesNotDependOnWorkers runs the same small matrix with one and
// with four workers and expects identical results, examples included.
func TestMatrixDoesNotDependOnWorkers(t *testing.T) {
	opt := Options{Seeds: 3, Classes: []faults.Class{faults.ClassPause, faults.ClassDrop}, Algorithms: []string{"set-nx-px-del", "set-nx-px-lua"}}
	opt.Workers = 1
	one, err := Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	var calls, last, total int
	opt.Workers = 4
	opt.Progress = func(done, all int) { calls, last, total = calls+1, done, all }
	four, err := Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := matrixJSON(t, one), matrixJSON(t, four); a != b {
		t.Fatalf("results differ with 1 and 4 workers:\n%s\n%s", a, b)
	}
	if calls != 12 || last != 12 || total != 12 {
		t.Fatalf("progress: %d calls, last %d/%d; want 12 calls ending 12/12", calls, last, total)
	}
	if len(one.Cells) != 4 || one.Cells[0].Algorithm != "set-nx-px-del" || one.Cells[1].Class != faults.ClassDrop {
		t.Fatalf("cells are not in row, column order: %+v", one.Cells)
	}
}

// TestMatrixAgreesWithTheCatalogue checks what a reader of the catalogue
// expects: a plain-DEL release breaks mutual exclusion when clients pause
// (del-wrong-client), and a resource that checks fencing tokens never
// accepts a lost update.
func TestMatrixAgreesWithTheCatalogue(t *testing.T) {
	bubblehost.Bind(t) // the Postgres rows run pgx in a bubble
	algs := []string{"set-nx-px-del"}
	var fenced []string
	for _, a := range Rows() {
		if sc, err := Base(a); err == nil && sc.Resource.TokenCheck != "none" {
			fenced = append(fenced, a)
		}
	}
	algs = append(algs, fenced...)
	classes := []faults.Class{faults.ClassPause, faults.ClassClock, faults.ClassRestart}
	res, err := Run(Options{Seeds: 12, Classes: classes, Algorithms: algs})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("plain DEL breaks mutual exclusion under pauses", func(t *testing.T) {
		del := res.Cell("set-nx-px-del", faults.ClassPause)
		if del.Errors > 0 {
			t.Fatalf("set-nx-px-del × pause: %d errors (%s)", del.Errors, del.FirstError)
		}
		if del.Violated.MutualExclusion == 0 {
			t.Errorf("set-nx-px-del × pause: no mutual-exclusion violation in %d runs", del.Runs)
		}
		if del.Example == nil || del.Example.Schedule.Classes()[0] != faults.ClassPause {
			t.Fatalf("set-nx-px-del × pause: example %+v", del.Example)
		}
	})
	t.Run("a fenced resource never loses an update", func(t *testing.T) {
		if len(fenced) == 0 {
			t.Skip("no registered algorithm issues fencing tokens yet (a fault-free run shows none): nothing to check")
		}
		if len(fenced) < 2 {
			t.Fatalf("fenced rows %v, want set-nx-px-lua and redlock with fencing", fenced)
		}
		for _, a := range fenced {
			for _, class := range classes {
				c := res.Cell(a, class)
				if c.Errors > 0 {
					t.Errorf("%s × %s: %d errors (%s)", a, class, c.Errors, c.FirstError)
				}
				if c.Violated.Resource > 0 {
					t.Errorf("%s × %s: %d resource violations although the resource checks fencing tokens (seed %d: %v)",
						a, class, c.Violated.Resource, c.Example.Seed, c.Example.Schedule)
				}
			}
		}
	})
}

// TestMatrixExampleReplays writes a cell's example as a scenario file,
// reads it back and runs it: the run must break what the example broke.
func TestMatrixExampleReplays(t *testing.T) {
	res, err := Run(Options{Seeds: 8, Classes: []faults.Class{faults.ClassPause}, Algorithms: []string{"set-nx-px-del"}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cell("set-nx-px-del", faults.ClassPause)
	if c.Example == nil {
		t.Fatal("no violating run in 8 seeds")
	}
	sc := c.ExampleScenario()
	data, err := sc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := scenarios.Parse("example.yaml", data)
	if err != nil {
		t.Fatalf("example does not parse: %v\n%s", err, data)
	}
	if back.Seed != c.Example.Seed || !strings.Contains(back.Narrative.What, "locklab matrix") {
		t.Fatalf("seed %d, narrative %q", back.Seed, back.Narrative.What)
	}
	r, err := runner.Run(back, back.Seed, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.Verdict != c.Example.Verdict {
		t.Fatalf("replay gives %+v, the matrix saw %+v", r.Report.Verdict, c.Example.Verdict)
	}
	if !r.Matches() {
		t.Fatalf("replay does not match its own expectation %+v", back.Expect)
	}
	if back.Expect.MutualExclusion != checker.Violated && back.Expect.Resource != checker.Violated && back.Expect.Liveness != checker.Violated {
		t.Fatalf("example expects no violation: %+v", back.Expect)
	}
	// A cell without an example has no scenario.
	if (&Cell{Algorithm: "set-nx-px-del", Class: faults.ClassPause}).ExampleScenario() != nil {
		t.Fatal("scenario for a cell without example")
	}
}

func TestMatrixBadOptions(t *testing.T) {
	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{Algorithms: []string{"nope"}}, `unknown algorithm "nope"`},
		{Options{Classes: []faults.Class{"gc"}}, `unknown fault class "gc"`},
		{Options{Seeds: -1}, "seeds"},
	} {
		if _, err := Run(c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.opt, err, c.want)
		}
	}
}
