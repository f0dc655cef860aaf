package scenarios

import (
	"regexp"
	"strings"
	"testing"
)

// aliasPartition is a partition whose first group names c1 and then
// aliases it n times (issue 25's "1000-alias partition").
func aliasPartition(n int, other string) string {
	return "id: x\nalgorithm: redlock\nttl: 10s\nnodes: [r1, r2, r3]\nclients: {count: 2}\nfaults:\n" +
		"  - {kind: partition, at: 1s, groups: [[&g c1" + strings.Repeat(", *g", n) + "], [" + other + "]]}\n"
}

var placed = regexp.MustCompile(`^x\.yaml:\d+:\d+: `)

// Issue 25: YAML aliases are followed wherever a value is read, and every
// refusal they lead to names the file, line and column; none is refused
// with the parser's placeless message, none eats memory.
func TestAliasesAreRefusedWithAPlace(t *testing.T) {
	// A host named once and aliased 1000 times is one host: accepted.
	if _, err := Parse("x.yaml", []byte(aliasPartition(1000, "r1"))); err != nil {
		t.Fatalf("1000 aliases of c1: %v", err)
	}
	// The same partition naming an unknown host: refused with a place.
	_, err := Parse("x.yaml", []byte(aliasPartition(1000, "zz")))
	if err == nil || !strings.Contains(err.Error(), `x.yaml:7:`) || !strings.Contains(err.Error(), `faults[0].groups[1][0]: unknown host "zz"`) {
		t.Fatalf("unknown host behind 1000 aliases: %v", err)
	}
	// An unknown host aliased 1000 times is refused once, at its first
	// use, not in 1001 equal lines (issue 32).
	_, err = Parse("x.yaml", []byte("id: x\nalgorithm: redlock\nttl: 10s\nnodes: [r1, r2, r3]\nclients: {count: 2}\nfaults:\n"+
		"  - {kind: partition, at: 1s, groups: [[c1], [&z zz"+strings.Repeat(", *z", 1000)+"]]}\n"))
	if err == nil || err.Error() != `x.yaml:7:47: faults[0].groups[1][0]: unknown host "zz"; expected one of c1, c2, r1, r2, r3, store` {
		t.Fatalf("1000 aliases of an unknown host: %v", err)
	}
	// A fault aliased past the faults limit, and an alias bomb whose
	// expansion passes the walk's node bound (1000 faults × 1100 names):
	// each is refused with a place.
	bomb := "id: x\nalgorithm: redlock\nttl: 10s\nnodes: [r1, r2, r3]\nclients: {count: 2}\nfaults:\n" +
		"  - &f {kind: partition, at: 1s, groups: [[&g c1" + strings.Repeat(", *g", 1100) + "], [r1]]}\n" +
		strings.Repeat("  - *f\n", 1999)
	for _, c := range []struct{ name, data, want string }{
		{"1001 aliased faults", "id: x\nalgorithm: redlock\nttl: 10s\nnodes: [r1, r2, r3]\nclients: {count: 2}\nfaults:\n  - &f {kind: pause, target: c1, at: 1s, duration: 1s}\n" + strings.Repeat("  - *f\n", 1000),
			"x.yaml:6:1: faults: expected at most 1000 faults (the limit; raise it with --max-faults), found 1001"},
		{"alias bomb", bomb, "YAML values, found more (aliases expanding too far?)"},
		{"1000 aliased lists where text belongs", "id: x\nalgorithm: redlock\nttl: 10s\nnodes: [r1, r2, r3]\nclients: {count: 2}\nfaults:\n  - {kind: partition, at: 1s, groups: [[&l [c1]" + strings.Repeat(", *l", 1000) + "], [r1]]}\n",
			// Each at its own alias, not 1001 times at the anchor.
			"x.yaml:7:41: faults[0].groups[0][0]: expected text, found a list\nx.yaml:7:50: faults[0].groups[0][1]: expected text, found a list\nx.yaml:7:54: faults[0].groups[0][2]:"},
	} {
		_, err := Parse("x.yaml", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
			continue
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !placed.MatchString(line) {
				t.Errorf("%s: a refusal without file:line:col: %q", c.name, line)
			}
		}
	}
}
