package locktest

// A failfile records the test, fault class and lock it was found for
// (scenarios.MadeFor), and a replay into anything else is refused with a
// sentence saying what differs: a counterexample replayed into another
// test judges a run that test never makes. A plain-DEL lock's stall
// failfile replayed into a 2-permit semaphore test reported "mutual
// exclusion violated" for two holders of two permits, and replayed into a
// MySQL test it printed ok for a lock that fails every class (issue 31,
// item 3). A refusal fails the class: it is never a pass.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
)

// testOf is the name of the test that called Run: the class subtest's
// name without its last element.
func testOf(t *testing.T) string {
	name := t.Name()
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return name
}

// madeFor is the record a failfile of this class carries.
func madeFor(t *testing.T, class Class, sc *scenarios.Scenario) *scenarios.MadeFor {
	return &scenarios.MadeFor{Test: testOf(t), Class: string(class), Lock: lockKind(sc)}
}

// lockKind describes the lock a scenario runs: its primitive, read from
// the scenario's permits and client modes, and its backend, read from
// the algorithm's registration.
func lockKind(sc *scenarios.Scenario) string {
	prim := "mutex"
	switch {
	case sc.Clients.Permits > 1:
		prim = fmt.Sprintf("semaphore of %d permits", sc.Clients.Permits)
	case hasModes(sc):
		prim = "reader-writer lock"
	}
	backend := sc.Algorithm
	if info, err := algorithms.Lookup(sc.Algorithm); err == nil && info.Backend != "" {
		backend = info.Backend
	}
	return prim + " on " + backend
}

func hasModes(sc *scenarios.Scenario) bool {
	for _, c := range sc.Clients.Each {
		if c.Mode != nil && *c.Mode != "" {
			return true
		}
	}
	return false
}

// checkMadeFor refuses to replay sc (read from file) into the class
// subtest t of a test whose runs start from base: it returns the
// sentence that says what differs, or nil.
func checkMadeFor(t *testing.T, file string, sc, base *scenarios.Scenario, class Class, caller string) error {
	var diffs []string
	test := testOf(t)
	if m := sc.MadeFor; m != nil {
		if m.Test != test {
			diffs = append(diffs, fmt.Sprintf("it was recorded for test %s, this is %s", m.Test, test))
		}
		if m.Class != string(class) {
			diffs = append(diffs, fmt.Sprintf("it was recorded for fault class %s, this is %s", m.Class, class))
		}
	} else if legacy := "locktest-" + strings.ReplaceAll(t.Name(), "/", "-"); strings.HasPrefix(sc.ID, "locktest-") && sc.ID != legacy+"-"+string(class) {
		// A failfile written before made_for: its id is
		// locktest-<test and class subtest>-<class>.
		diffs = append(diffs, fmt.Sprintf("its id %s is not this test's and class's (%s-%s)", sc.ID, legacy, class))
	} else if !strings.HasPrefix(sc.ID, "locktest-") {
		// A scenario written by locklab (explore): it names no test; its
		// faults must be of this class.
		for _, c := range sc.Faults.Classes() {
			if c != faults.Class(class) && class != Stall && class != Failover {
				diffs = append(diffs, fmt.Sprintf("its faults are of class %s, this is %s", c, class))
				break
			}
		}
	}
	if sc.MadeFor != nil && sc.Resource.Reliable != base.Resource.Reliable {
		// A failfile written before made_for predates the option and
		// replays as it was found, with faults on the store.
		diffs = append(diffs, fmt.Sprintf("it was recorded %s, this test runs %s", storeFaults(sc), storeFaults(base)))
	}
	if got, want := lockKind(sc), lockKind(base); got != want {
		diffs = append(diffs, fmt.Sprintf("it was recorded for a %s, this test's lock is a %s", got, want))
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("locktest: %s: refusing to replay %s: %s; its verdict would say nothing about this test (replay it with the go test -run line of the test it names, or delete it)", where(class, caller), file, strings.Join(diffs, "; "))
}

func storeFaults(sc *scenarios.Scenario) string {
	if sc.Resource.Reliable {
		return "with the store spared from faults"
	}
	return "with faults on the store (Options.FaultStore)"
}
