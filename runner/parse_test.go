package runner

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
)

const validScenario = `id: mine
algorithm: set-nx-px-lua
ttl: 10s
nodes: [A]
clients: {count: 2}
faults:
  - kind: pause
    target: c1
    duration: 15s
    after: {client: c1, op: READ}
expect: {resource: violated}
`

func TestParseValid(t *testing.T) {
	s, err := scenarios.Parse("mine.yaml", []byte(validScenario))
	if err != nil {
		t.Fatal(err)
	}
	if s.Clients.Cycles != 3 || s.Key != "lock" || s.Duration.D().Seconds() != 30 {
		t.Fatalf("defaults not applied: %+v", s)
	}
}

func TestParseErrorsNameFileLineAndField(t *testing.T) {
	cases := []struct {
		name, edit, want string
	}{
		{"unknown client", "target: c1", `mine.yaml:8:13: faults[0].target: unknown client "c9"; expected one of c1, c2`},
		{"unknown algorithm", "algorithm: set-nx-px-lua", `mine.yaml:2:12: algorithm: unknown algorithm "nope"`},
		{"bad duration", "ttl: 10s", `mine.yaml:3:6: ttl: expected a duration between 1ms and 24h such as 250ms or 10s, found "ten"`},
		{"unknown field", "clients: {count: 2}", `mine.yaml:5:21: clients.colour: unknown field "colour"; expected one of count, cycles,`},
		{"bad fault kind", "kind: pause", `mine.yaml:7:11: faults[0].kind: unknown fault kind "nap"`},
		{"bad expectation", "expect: {resource: violated}", `mine.yaml:11:20: expect.resource: expected ok, violated or unknown, found "broken"`},
	}
	repl := map[string]string{
		"unknown client":    "target: c9",
		"unknown algorithm": "algorithm: nope",
		"bad duration":      "ttl: ten",
		"unknown field":     "clients: {count: 2, colour: red}",
		"bad fault kind":    "kind: nap",
		"bad expectation":   "expect: {resource: broken}",
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := strings.Replace(validScenario, c.edit, repl[c.name], 1)
			_, err := scenarios.Parse("mine.yaml", []byte(data))
			if err == nil {
				t.Fatal("no error")
			}
			var fe *scenarios.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a *FieldError", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestParseEmptyAndNonMapping(t *testing.T) {
	for _, data := range []string{"", "   \n", "- a\n- b\n", "just text"} {
		if _, err := scenarios.Parse("x.yaml", []byte(data)); err == nil || !strings.HasPrefix(err.Error(), "x.yaml") {
			t.Errorf("%q: error %v, want one naming x.yaml", data, err)
		}
	}
}

// Issue 25: every document of a file is read, so a third one (even with a
// syntax error) is refused with its place, and bytes that are not UTF-8
// are refused with line:col rather than the parser's placeless message.
func TestParseRefusesWithAPlace(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"third document", validScenario + "---\n---\nid: other\n", "x.yaml:" + itoa(lines(validScenario)+3) + ":1: expected one scenario per file, found YAML document 3"},
		{"syntax error in a third document", validScenario + "---\n---\nid: [\n", "x.yaml:" + itoa(lines(validScenario)+3) + ": did not find expected node content"},
		{"latin-1", "id: caf\xe9\n", "x.yaml:1:8: expected UTF-8 text, found the byte 0xe9"},
		{"overlong utf-8", "id: x\nalgorithm: r\xc0\xafedlock\n", "x.yaml:2:13: expected UTF-8 text, found the byte 0xc0"},
	}
	for _, c := range cases {
		_, err := scenarios.Parse("x.yaml", []byte(c.data))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want prefix %q", c.name, err, c.want)
		}
	}
	// Trailing empty documents are still fine.
	if _, err := scenarios.Parse("x.yaml", []byte(validScenario+"---\n---\n")); err != nil {
		t.Errorf("trailing empty documents: %v", err)
	}
}

func lines(s string) int { return strings.Count(s, "\n") }

func itoa(n int) string { return strconv.Itoa(n) }

// Issue 25: a compared algorithm that cannot run on the file's nodes is
// refused at validation, with the place of the compare entry.
func TestParseRefusesCompareWithoutItsNodes(t *testing.T) {
	data := "id: x\nalgorithm: gozk-simple\nttl: 10s\nclients: {count: 2}\ncompare: [set-nx-px-lua]\n"
	_, err := scenarios.Parse("x.yaml", []byte(data))
	want := "x.yaml:5:11: compare[0]: algorithm set-nx-px-lua needs at least 1 Redis lock node(s)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// Issue 25: an unknown key does not hide the file's other errors; both
// passes run and every error is printed, in the file's order.
func TestParseUnknownKeyDoesNotHideOtherErrors(t *testing.T) {
	data := "id: x\nalgorithm: set-nx-px-lua\ntll: 10s\nnodes: [A]\nclients: {count: 0}\n"
	_, err := scenarios.Parse("x.yaml", []byte(data))
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{
		`x.yaml:3:1: tll: unknown field "tll"`,
		"x.yaml:5:18: clients.count: expected between 1 and",
	}
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, w)
		}
		if !found {
			t.Errorf("no line %q in:\n%s", w, err)
		}
	}
	if !strings.Contains(err.Error(), "ttl: missing") {
		t.Errorf("the missing ttl (misspelt tll) is not reported:\n%s", err)
	}
}
