package locktest

// What a class's runs came to, and how it is said: the verdict line, the
// counterexample (faults, witness, the user's calls that failed), the
// replay command and the report.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

// finding is what a class's runs came to.
type finding struct {
	prop Outcome // Safe when nothing broke
	sc   *scenarios.Scenario
	res  *runner.Result
	file string
	what string
	runs int
	seed uint64
	// run is the index of the exploration's first violating run (0: the
	// finding is not an exploration's).
	run int
	// expect is what the class was expected to do (set by judge): the
	// report of the counterexample is judged against it.
	expect Outcome
}

func violated(v checker.Verdict) Outcome {
	var o Outcome
	if v.MutualExclusion == checker.Violated {
		o |= MutualExclusion
	}
	if v.Resource == checker.Violated {
		o |= Resource
	}
	if v.Liveness == checker.Violated {
		o |= Liveness
	}
	return o
}

// where names a class and the user's call of Run ("stall (Run at
// lock_test.go:42)") at the head of every line a class logs: the class's
// subtest has no frame of the user's, so testing's own file:line points
// into this package whatever t.Helper says.
func where(class Class, caller string) string {
	if caller == "" {
		return string(class)
	}
	return string(class) + " (Run at " + caller + ")"
}

// met says whether a class that came to prop meets expect.
func met(expect, prop Outcome) bool {
	switch {
	case expect&Any != 0:
		return true
	case expect&AtMost != 0:
		return prop&^(expect&^AtMost) == 0
	case prop == Safe:
		return expect == Safe
	}
	return expect&prop != 0
}

// exclusionName is what "more holders than the primitive allows" is
// called for the lock base runs: mutual exclusion for a mutex, the permit
// limit for a semaphore, reader-writer exclusion for an RW lock.
func exclusionName(base *scenarios.Scenario) string {
	switch {
	case base == nil:
	case base.Clients.Permits > 1:
		return fmt.Sprintf("permit limit (at most %d holders at once)", base.Clients.Permits)
	case hasModes(base):
		return "reader-writer exclusion (a writer holds alone, readers share)"
	}
	return "mutual exclusion"
}

// judge compares a class's finding with its expectation and logs or fails.
// A class runs in a subtest of its own, so testing's file:line points into
// this package whatever t.Helper says; each line names the user's call of
// Run (caller) instead. base names the primitive in the verdict line.
func judge(t *testing.T, class Class, expect Outcome, caller string, base *scenarios.Scenario, f finding) {
	t.Helper()
	f.expect = expect
	if observe != nil {
		observe(t, class, f)
	}
	at := where(class, caller)
	me := exclusionName(base)
	if f.prop == Safe {
		if met(expect, Safe) {
			t.Logf("locktest: %s: no violation in %d runs (seed %d)", at, f.runs, f.seed)
		} else {
			t.Errorf("locktest: %s: expected %s, but %d runs (seed %d) found no violation", at, expect.named(" or ", me), f.runs, f.seed)
		}
		return
	}
	msg := describe(t, class, f)
	if met(expect, f.prop) {
		t.Logf("locktest: %s: %s, as expected\n%s", at, f.prop.named(" and ", me), msg)
		return
	}
	t.Errorf("locktest: %s: %s, expected %s\n%s", at, f.prop.named(" and ", me), expect.named(" or ", me), msg)
}

// describe renders a counterexample: faults, witness, the user's calls
// that returned an error, replay, report.
func describe(t *testing.T, class Class, f finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  found in %s:\n", f.what)
	for _, fl := range f.sc.Faults {
		fmt.Fprintf(&b, "    %s\n", fl.String())
	}
	writeWitness(&b, f.res)
	writeCalls(&b, f.res)
	if f.file != "" {
		replay := replayCommand(t, f.file)
		fmt.Fprintf(&b, "  replay:  %s\n", replay)
		if *flagReport != "" {
			path := reportPath(*flagReport, class)
			if err := writeReport(path, reportResult(f.res, f.expect), replay); err != nil {
				fmt.Fprintf(&b, "  report:  %v\n", err)
			} else {
				fmt.Fprintf(&b, "  report:  %s\n", path)
			}
		} else {
			fmt.Fprintf(&b, "  report:  add -locktest.report=out.html to the replay command\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func writeWitness(b *strings.Builder, res *runner.Result) {
	w := res.Report.Witness
	if w.MutualExclusion != nil {
		fmt.Fprintf(b, "  witness: %s\n", w.MutualExclusion)
	}
	if w.Resource != nil {
		fmt.Fprintf(b, "  witness: %s\n", w.Resource)
	}
	if w.Liveness != nil {
		fmt.Fprintf(b, "  witness: %s\n", w.Liveness)
	}
}

// maxCalls bounds the lines of failed calls a counterexample shows.
const maxCalls = 6

// writeCalls names the user's calls that returned an error, from the
// run's events: a refused hold is a Lock that failed, a failed release an
// Unlock. Each distinct (client, call, error) shows once, with how often
// and when first, and the fault last applied before it: the error of
// pg_advisory_unlock showed only in the trace before (issue 31, item 5).
func writeCalls(b *strings.Builder, res *runner.Result) {
	type call struct{ client, name, err string }
	type seen struct {
		first time.Duration
		n     int
	}
	var order []call
	count := map[call]*seen{}
	for _, e := range res.Events {
		var name string
		switch e.Kind {
		case event.AcquireFailed:
			name = "Lock"
		case event.ReleaseFailed:
			name = "Unlock"
		default:
			continue
		}
		// The harness wraps a failed Lock in algorithms.ErrNotAcquired;
		// the user's error is what follows.
		c := call{e.Client, name, strings.TrimPrefix(e.Reason, algorithms.ErrNotAcquired.Error()+": ")}
		if s, ok := count[c]; ok {
			s.n++
			continue
		}
		count[c] = &seen{first: e.At, n: 1}
		order = append(order, c)
	}
	for i, c := range order {
		if i == maxCalls {
			fmt.Fprintf(b, "  calls:   … %d more distinct errors in the trace (-locktest.replay writes it)\n", len(order)-maxCalls)
			break
		}
		s := count[c]
		times := ""
		if s.n > 1 {
			times = fmt.Sprintf(" (%d times)", s.n)
		}
		fmt.Fprintf(b, "  calls:   %s's %s returned %q at %s%s%s\n", c.client, c.name, c.err, checker.Sec(s.first), times, faultBefore(res.Applied, s.first))
	}
}

// faultBefore names the last fault applied at or before at.
func faultBefore(applied []faults.Applied, at time.Duration) string {
	var last *faults.Applied
	for i := range applied {
		if applied[i].At <= at {
			last = &applied[i]
		}
	}
	if last == nil {
		return ", before any fault"
	}
	return fmt.Sprintf(", after the fault %s (applied at %s)", last.Fault.String(), checker.Sec(last.At))
}

// reportResult is res as the HTML report shows it: judged against the
// test's expectation, not against the expect block the shrinker wrote
// into the counterexample (which the run always matches), and with the
// key the user's lock used, so the report's key lane finds it.
func reportResult(res *runner.Result, expect Outcome) *runner.Result {
	r := *res
	sc := res.Scenario.Clone()
	sc.Expect = scenarios.Expect{}
	if expect&Any == 0 {
		allowed := expect &^ AtMost
		for _, p := range []struct {
			o   Outcome
			dst *checker.Status
		}{{MutualExclusion, &sc.Expect.MutualExclusion}, {Resource, &sc.Expect.Resource}, {Liveness, &sc.Expect.Liveness}} {
			if allowed&p.o == 0 {
				*p.dst = checker.OK // not allowed to break; an allowed one is not asserted
			}
		}
	}
	if key := lockKeyOf(res.Events); key != "" {
		sc.Key = key
	}
	r.Scenario = sc
	return &r
}

// lockKeyOf is the key a user's Redis lock takes, from the commands its
// clients sent: the key of the first SET … NX, or the first key of the
// first script run (EVAL, EVALSHA with at least one key). "" when none.
func lockKeyOf(events []event.Event) string {
	for _, e := range events {
		if e.Kind != event.CommandSent || len(e.Args) < 2 {
			continue
		}
		switch strings.ToUpper(e.Args[0]) {
		case "SET":
			for _, a := range e.Args[2:] {
				if strings.EqualFold(a, "NX") {
					return e.Args[1]
				}
			}
		case "EVAL", "EVALSHA":
			if len(e.Args) >= 4 && e.Args[2] != "0" {
				return e.Args[3]
			}
		}
	}
	return ""
}

// reportPath puts the class before the extension: out.html → out-pause.html.
func reportPath(path string, class Class) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + string(class) + ext
}
