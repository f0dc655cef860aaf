package main

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
)

// 'help scenario' lists every param a scenario may give, for every
// algorithm, under a heading that applies to that algorithm, and the
// semaphore and reader-writer settings with their readers: it is generated
// from the registries, so a registered param cannot be missing (issue 31
// item 7: the database, semaphore and RW ones were all missing).
func TestHelpScenarioListsEveryParam(t *testing.T) {
	code, out, _ := runCLI(t, "help", "scenario")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, paramsPlaceholder) {
		t.Fatal("the params placeholder was printed")
	}
	_, section, ok := strings.Cut(out, "\nParams (")
	if !ok {
		t.Fatal("no Params section")
	}
	section, _, _ = strings.Cut(section, "\nSemaphore and reader-writer settings")
	// heading -> param names listed under it
	listed := map[string]map[string]bool{}
	heading := ""
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(line, ":"):
			heading = strings.TrimSuffix(strings.TrimSpace(line), ":")
			listed[heading] = map[string]bool{}
		case strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     ") && heading != "":
			listed[heading][strings.Fields(line)[0]] = true
		}
	}
	total := 0
	for _, name := range algorithms.Names() {
		info, _ := algorithms.Lookup(name)
		accepted, ok := scenarios.AcceptedParams(name)
		if !ok {
			t.Fatalf("%s: no params", name)
		}
		headings := []string{"every algorithm", "backend " + info.Backend, "algorithm " + name}
		if info.Backend == "redis" {
			headings = append(headings, "every redis algorithm")
		}
		for _, p := range accepted {
			found := false
			for _, h := range headings {
				found = found || listed[h][p.Name]
			}
			if !found {
				t.Errorf("help scenario does not list %s's param %s under any of %v", name, p.Name, headings)
			}
			total++
		}
	}
	// The ones the issue names, so the test cannot pass on an empty registry.
	for _, want := range []struct{ heading, param string }{
		{"backend postgres", "pooler"}, {"backend postgres", "keepalive_idle"}, {"backend postgres", "standby"},
		{"algorithm mysql-get-lock", "connection"}, {"backend mysql", "nodes"}, {"backend mysql", "route"},
		{"backend mysql", "wait_timeout"}, {"algorithm redis-permit-semaphore", "refresh"},
		{"algorithm redis-semaphore", "clock"}, {"algorithm redis-rwlock", "prefer"}, {"algorithm pg-advisory-rw", "wait"},
	} {
		if !listed[want.heading][want.param] {
			t.Errorf("help scenario does not list %s under %q", want.param, want.heading)
		}
	}
	if total < 100 {
		t.Errorf("only %d algorithm × param pairs checked", total)
	}
	_, fields, _ := strings.Cut(out, "\nSemaphore and reader-writer settings")
	fields, _, _ = strings.Cut(fields, "\n\n")
	for _, f := range []string{"clients.permits", "clients.mode", "clients.each.<c>.mode"} {
		if !strings.Contains(fields, f) {
			t.Errorf("help scenario does not list %s", f)
		}
	}
	for _, r := range append(algorithms.Readers(algorithms.ParamPermits), algorithms.Readers(algorithms.ParamMode)...) {
		if !strings.Contains(fields, r) {
			t.Errorf("help scenario does not say %s reads a semaphore or RW setting", r)
		}
	}
	for _, line := range strings.Split(section+"\n"+fields, "\n") {
		if len(line) > 78 {
			t.Errorf("line longer than 78 columns: %q", line)
		}
	}
}
