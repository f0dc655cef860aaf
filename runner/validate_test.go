package runner

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
)

// base is a valid scenario with a replica, so every edit below has a place
// to go; line numbers in the expectations refer to it.
const base = `id: base
algorithm: set-nx-px-lua
ttl: 10s
nodes:
  - A
  - {name: B, replica_of: A}
clients: {count: 2, cycles: 2}
duration: 30s
faults:
  - kind: pause
    target: c1
    at: 1s
    duration: 2s
expect: {mutual_exclusion: ok}
`

// crashInputs are the inputs issue 15 found crashing, hanging, eating
// memory or silently running a different experiment; each must now be a
// one-line error naming file:line:col and the field. They also seed the
// fuzz corpus.
var crashInputs = []struct {
	name, from, to, want string
}{
	{"replica of a client", "replica_of: A", "replica_of: c1", `x.yaml:6:27: nodes[1].replica_of: expected the name of another Redis node (A), found "c1"`},
	{"replica of the resource", "replica_of: A", "replica_of: store", `x.yaml:6:27: nodes[1].replica_of: expected the name of another Redis node (A), found "store"`},
	{"replica of a typo", "replica_of: A", "replica_of: a", `(did you mean A?)`},
	{"at near int64 max", "at: 1s", "at: 2562047h", `x.yaml:12:9: faults[0].at: expected a duration between 0s and 8760h, found "2562047h"`},
	{"duration overflowing int64", "at: 1s", "at: 9223372036854775808ns", `x.yaml:12:9: faults[0].at: expected a duration between 0s and 8760h such as 250ms or 10s`},
	{"negative restart_after", "kind: pause\n    target: c1\n    at: 1s\n    duration: 2s", "kind: node-crash\n    target: A\n    at: 1s\n    restart_after: -1s", `x.yaml:13:20: faults[0].restart_after: expected a duration between 0s and 8760h, found "-1s"`},
	{"negative partition", "kind: pause\n    target: c1\n    at: 1s\n    duration: 2s", "kind: partition\n    groups: [[c1], [A]]\n    at: 1s\n    duration: -1s", `x.yaml:13:15: faults[0].duration: expected a duration between 0s and 8760h, found "-1s"`},
	{"negative drop", "kind: pause\n    target: c1\n    at: 1s\n    duration: 2s", "kind: drop\n    client: c1\n    at: 1s\n    duration: -5s", `faults[0].duration: expected a duration between 0s and 8760h, found "-5s"`},
	{"stopped client clock", "clients: {count: 2, cycles: 2}", "clients: {count: 2, cycles: 2, each: {c1: {ppm: -1000000}}}", `x.yaml:7:49: clients.each.c1.ppm: expected a whole number between -999999 and 1000000, found "-1000000"`},
	{"per-client cycles", "clients: {count: 2, cycles: 2}", "clients: {count: 2, cycles: 2, each: {c2: {cycles: 1000000000000}}}", `clients.each.c2.cycles: expected between 0 and 20000 lock cycles, found 1000000000000`},
	{"unknown key in a node", "{name: B, replica_of: A}", "{name: B, replica_of: A, colour: red}", `x.yaml:6:30: nodes[1].colour: unknown field "colour"; expected one of name, offset, ppm, replica_of, lag, role`},
	{"typo in a node", "{name: B, replica_of: A}", "{name: B, replica_off: A}", `nodes[1].replica_off: unknown field "replica_off"; expected one of name, offset, ppm, replica_of, lag, role, min_replicas_to_write, min_replicas_max_lag (did you mean replica_of?)`},
	{"unknown params key", "ttl: 10s", "ttl: 10s\nparams: {verify_ownershp: \"true\"}", `x.yaml:4:27: params.verify_ownershp: set-nx-px-lua does not read "verify_ownershp"; expected one of fence_start, validity_from, verify_ownership, wait_replicas, wait_timeout, watchdog, token_source (did you mean verify_ownership?)`},
	{"wait_timeout without bound", "ttl: 10s", "ttl: 10s\nparams: {wait_replicas: \"1\", wait_timeout: 2562047h}", `x.yaml:4:44: params.wait_timeout: expected a duration between 1ms and 1h such as 200ms, found "2562047h"`},
	{"bad params value", "ttl: 10s", "ttl: 10s\nparams: {validity_from: later}", `x.yaml:4:25: params.validity_from: expected start or reply, found "later"`},
	{"unknown op", "kind: pause\n    target: c1\n    at: 1s\n    duration: 2s", "kind: drop\n    op: SETT\n    at: 1s", `x.yaml:11:9: faults[0].op: unknown op "SETT"; expected a Redis command`},
	{"unknown trigger op", "at: 1s", "after: {client: c1, op: EVALL}", `faults[0].after.op: unknown op "EVALL"`},
	{"probability with at", "duration: 2s\nexpect", "duration: 2s\n    probability: 0.5\nexpect", `x.yaml:14:18: faults[0].probability: a pause fault does not use probability; expected only target, duration, at, after, note`},
	{"at and after", "at: 1s", "at: 1s\n    after: {client: c1, op: SET}", `faults[0].after: give either at or after, not both`},
	{"second document", "expect: {mutual_exclusion: ok}\n", "expect: {mutual_exclusion: ok}\n---\nid: other\n", `x.yaml:16:1: expected one scenario per file, found YAML document 2 (after ---)`},
	{"third document after an empty one", "expect: {mutual_exclusion: ok}\n", "expect: {mutual_exclusion: ok}\n---\n---\nid: other\n", `x.yaml:17:1: expected one scenario per file, found YAML document 3 (after ---)`},
	{"syntax error in a third document", "expect: {mutual_exclusion: ok}\n", "expect: {mutual_exclusion: ok}\n---\n---\nid: [unclosed\n", `x.yaml:16: did not find expected ',' or ']'`},
	{"fractional count", "count: 2,", "count: 2.5,", `x.yaml:7:18: clients.count: expected a whole number, found "2.5"`},
	{"node named like the zk server", "algorithm: set-nx-px-lua", "algorithm: set-nx-px-lua\ncompare: [gozk-queue]", ""},
	{"node named like the resource", "  - A\n", "  - A\n  - store\n", `nodes[1].name: the name "store" is taken by the protected resource`},
	{"ttl beyond int64 arithmetic", "ttl: 10s", "ttl: 2000000h", `x.yaml:3:6: ttl: expected a duration between 1ms and 24h, found "2000000h"`},
	{"negative ttl", "ttl: 10s", "ttl: -1s", `x.yaml:3:6: ttl: expected a duration between 1ms and 24h, found "-1s"`},
	{"type error without Go names", "clients: {count: 2, cycles: 2}", "clients: {count: [2], cycles: 2}", `x.yaml:7:18: clients.count: expected a whole number, found a list`},
	{"huge work range", "clients: {count: 2, cycles: 2}", "clients: {count: 2, cycles: 2, work: 0s..2562047h}", `x.yaml:7:38: clients.work: expected durations between 0s and 24h, found "0s..2562047h"`},
	{"cycles 1e12", "cycles: 2}", "cycles: 1e12}", `clients.cycles: expected at most 20000 lock cycles in all`},
	{"client clock offset", "clients: {count: 2, cycles: 2}", "clients: {count: 2, cycles: 2, each: {c1: {offset: 9000h}}}", `clients.each.c1.offset: expected a duration between -8760h and 8760h, found "9000h"`},
	{"bool as text", "clients: {count: 2, cycles: 2}", "clients: {count: 2, cycles: 2, check_validity: yes please}", `clients.check_validity: expected true or false, found "yes please"`},
	{"unknown each client", "clients: {count: 2, cycles: 2}", "clients: {count: 2, cycles: 2, each: {c3: {cycles: 1}}}", `clients.each.c3: unknown client "c3"; expected one of c1, c2`},
	{"unknown fault kind typo", "kind: pause", "kind: pasue", `faults[0].kind: unknown fault kind "pasue"; expected one of pause, crash, hang, drop, delay, clock-jump, drift, node-crash, failover, partition, heal (did you mean pause?)`},
	{"terminal escapes in a key", "ttl: 10s", "ttl: 10s\n\"\\e[31mred\": 1", `unknown field "[31mred"`},
}

func TestCrashInputsAreOneLineErrors(t *testing.T) {
	for _, c := range crashInputs {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(base, c.from) {
				t.Fatalf("edit %q not found in the base scenario", c.from)
			}
			data := strings.Replace(base, c.from, c.to, 1)
			_, err := scenarios.Parse("x.yaml", []byte(data))
			if c.name == "node named like the zk server" {
				// the zk server's name is reserved when a compared
				// algorithm brings ZooKeeper along
				data = strings.Replace(data, "  - A\n", "  - A\n  - zk1\n", 1)
				_, err = scenarios.Parse("x.yaml", []byte(data))
				c.want = `x.yaml:7:5: nodes[1].name: the name "zk1" is taken by the zookeeper-ensemble server`
			}
			if err == nil {
				t.Fatalf("accepted:\n%s", data)
			}
			var fe *scenarios.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FieldError: %v", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "x.yaml:") {
					t.Errorf("line does not name the file and line: %q", line)
				}
				for _, leak := range []string{"int64", "float64", "scenarios.", "faults.", "time.Duration", "!!"} {
					if strings.Contains(line, leak) {
						t.Errorf("message leaks %q: %q", leak, line)
					}
				}
				if strings.ContainsAny(line, "\x1b\r") {
					t.Errorf("message carries control characters: %q", line)
				}
			}
		})
	}
}

func TestEveryErrorOfAFileAtOnce(t *testing.T) {
	data := strings.NewReplacer("ttl: 10s", "ttl: 10", "count: 2,", "count: 2.5,", "target: c1", "target: c9").Replace(base)
	_, err := scenarios.Parse("x.yaml", []byte(data))
	if err == nil {
		t.Fatal("accepted")
	}
	// Shape errors come first (the file cannot be read further without
	// guessing); both are reported, in file order.
	want := "x.yaml:3:6: ttl: expected a duration between 1ms and 24h such as 250ms or 10s, found \"10\"\n" +
		"x.yaml:7:18: clients.count: expected a whole number, found \"2.5\""
	if err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
	// Meaning errors are all reported too.
	data = strings.NewReplacer("target: c1", "target: c9", "replica_of: A", "replica_of: c2", "{mutual_exclusion: ok}", "{mutual_exclusion: yes}").Replace(base)
	_, err = scenarios.Parse("x.yaml", []byte(data))
	var list scenarios.Errors
	if !errors.As(err, &list) || len(list) != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
}

func TestMergeKeysAreCheckedAsTheirLevel(t *testing.T) {
	ok := strings.Replace(base, "clients: {count: 2, cycles: 2}", "x-defaults: &d {count: 2, cycles: 2}\nclients: {<<: *d}", 1)
	if _, err := scenarios.Parse("x.yaml", []byte(ok)); err == nil || !strings.Contains(err.Error(), `x.yaml:7:1: x-defaults: unknown field "x-defaults"`) {
		t.Fatalf("top-level extension key: %v", err)
	}
	merged := strings.Replace(base, "clients: {count: 2, cycles: 2}", "clients:\n  <<: {count: 2, cycels: 2}", 1)
	if _, err := scenarios.Parse("x.yaml", []byte(merged)); err == nil || !strings.Contains(err.Error(), `clients.cycels: unknown field "cycels"`) {
		t.Fatalf("merged typo: %v", err)
	}
	merged = strings.Replace(base, "clients: {count: 2, cycles: 2}", "clients:\n  <<: {count: 2, cycles: 2}", 1)
	if _, err := scenarios.Parse("x.yaml", []byte(merged)); err != nil {
		t.Fatalf("merge: %v", err)
	}
}

func TestFaultThatCannotFireWarns(t *testing.T) {
	s, err := scenarios.Parse("x.yaml", []byte(strings.Replace(base, "at: 1s", "at: 40s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0].Error(), "x.yaml:12:9: faults[0].at: this pause fault can never fire: 40s is not before the end of the run (duration 30s)") {
		t.Fatalf("warnings %v", s.Warnings)
	}
}

func TestLimits(t *testing.T) {
	var nodes strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&nodes, "  - N%d\n", i)
	}
	big := strings.Replace(base, "  - A\n", "  - A\n"+nodes.String(), 1)
	if _, err := scenarios.Parse("x.yaml", []byte(big)); err == nil || !strings.Contains(err.Error(), "x.yaml:4:1: nodes: expected at most 64 nodes (the limit; raise it with --max-nodes), found 20002") {
		t.Fatalf("20000 nodes: %v", err)
	}
	lim := scenarios.DefaultLimits
	lim.Nodes = 30000
	lim.Connections = 1 << 20
	if _, err := scenarios.ParseWith("x.yaml", []byte(big), lim); err != nil {
		t.Fatalf("raised node limit: %v", err)
	}
	// 2M faults: a 52 MB file, refused before it is parsed.
	huge := base + strings.Repeat("  - {kind: crash, target: c1, at: 1s}\n", 2_000_000)
	if _, err := scenarios.Parse("x.yaml", []byte(huge)); err == nil || !strings.Contains(err.Error(), "x.yaml: expected a scenario file of at most 1048576 bytes (the limit; raise it with --max-file-size)") {
		t.Fatalf("2M faults: %v", err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"count: 2,", "count: 5000,", "clients.count: expected between 1 and 1000 clients (the limit; raise it with --max-clients), found 5000"},
		{"duration: 30s", "duration: 48h", "duration: expected a simulated run length between 1ms and 24h (the limit; raise it with --max-duration), found 48h0m0s"},
	} {
		if _, err := scenarios.Parse("x.yaml", []byte(strings.Replace(base, c.from, c.to, 1))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.to, err)
		}
	}
	lim = scenarios.DefaultLimits
	lim.Connections = 300
	if _, err := scenarios.ParseWith("x.yaml", []byte(strings.Replace(base, "count: 2,", "count: 200,", 1)), lim); err == nil || !strings.Contains(err.Error(), "x.yaml:7:18: clients.count: expected at most 300 connections (clients × Redis nodes; the limit, raise it with --max-connections), found 400") {
		t.Errorf("connections: %v", err)
	}
	lim = scenarios.DefaultLimits
	lim.Duration = 72 * time.Hour
	if _, err := scenarios.ParseWith("x.yaml", []byte(strings.Replace(base, "duration: 30s", "duration: 48h", 1)), lim); err != nil {
		t.Errorf("raised duration limit: %v", err)
	}
}

// A huge client count is refused from the number alone: validation used to
// build every client's name first (issue 25: 1e9 took 21–85 s and up to
// 6 GiB). Asserted on memory allocated, not on time.
func TestHugeClientCountRefusedWithoutBuildingClients(t *testing.T) {
	for _, count := range []string{"1e7", "1e9", "9e18", "10000000"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := scenarios.Parse("x.yaml", []byte(strings.Replace(base, "count: 2,", "count: "+count+",", 1)))
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "clients.count: expected between 1 and 1000 clients") {
			t.Errorf("count %s: %v", count, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("count %s: validation allocated %d MiB before refusing", count, alloc>>20)
		}
	}
}

func TestLoadRefusesDevicesAndHugeFilesFast(t *testing.T) {
	_, err := scenarios.Load("/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "/dev/zero: expected a scenario file of at most 1048576 bytes") {
		t.Fatalf("/dev/zero: %v", err)
	}
	_, err = scenarios.Load(t.TempDir() + "/")
	if err == nil || !strings.Contains(err.Error(), "found a directory") {
		t.Fatalf("directory: %v", err)
	}
}

// A file-size limit of 2^63-1 reads the file: the one byte past the limit
// wrapped to a negative count and every file read as empty (issue 25).
func TestLargestFileLimitReadsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	lim := scenarios.DefaultLimits
	lim.FileBytes = math.MaxInt64
	if sc, err := scenarios.LoadWith(path, lim); err != nil || sc.ID == "" {
		t.Fatalf("limit 2^63-1: %v", err)
	}
}
