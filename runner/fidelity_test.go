package runner

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
)

// The fields of issue 11 (client clock kind, min-replicas) are checked
// where they are read, with the file, line and field in the message.
func TestParseFidelityFields(t *testing.T) {
	for _, c := range []struct {
		edit, repl, want string
	}{
		{"clients: {count: 2}", "clients: {count: 2, clock: solar}", `mine.yaml:5:28: clients.clock: expected monotonic or wall, found "solar"`},
		{"clients: {count: 2}", "clients: {count: 2, each: {c1: {clock: sundial}}}", `mine.yaml:5:40: clients.each.c1.clock: expected monotonic or wall, found "sundial"`},
		{"nodes: [A]", "nodes: [{name: A, min_replicas_to_write: 1, min_replicas_max_lag: 500ms}]", `mine.yaml:4:67: nodes[0].min_replicas_max_lag: expected a lag between 1s and 1h (Redis counts whole seconds), found 500ms`},
		{"nodes: [A]", "nodes: [{name: A, min_replicas_to_write: -1}]", `mine.yaml:4:42: nodes[0].min_replicas_to_write: expected a whole number between 0 and 100, found "-1"`},
	} {
		_, err := scenarios.Parse("mine.yaml", []byte(strings.Replace(validScenario, c.edit, c.repl, 1)))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got  %v\n want %s", c.repl, err, c.want)
		}
	}
	for _, ok := range []string{"clients: {count: 2, clock: wall}", "clients: {count: 2, clock: monotonic, each: {c2: {clock: wall}}}"} {
		if _, err := scenarios.Parse("mine.yaml", []byte(strings.Replace(validScenario, "clients: {count: 2}", ok, 1))); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// A bad WAIT option is refused by the validation pass, naming the file,
// line and parameter.
func TestWaitReplicasOption(t *testing.T) {
	_, err := scenarios.Parse("mine.yaml", []byte(strings.Replace(validScenario, "nodes: [A]", "params: {wait_replicas: \"none\"}\nnodes: [A]", 1)))
	if err == nil || !strings.Contains(err.Error(), `mine.yaml:4:25: params.wait_replicas: expected a number of replicas >= 1, found "none"`) {
		t.Fatalf("parse: %v", err)
	}
}
