package scenarios

import (
	"strings"
	"testing"
)

// ensembleBase is a valid scenario on the simulated ensemble; the tests
// below edit it.
const ensembleBase = `id: zk-base
algorithm: gozk-lock
ttl: 6s
params:
  zk_servers: "3"
  session_timeout: 4s
clients: {count: 2, cycles: 1}
duration: 20s
faults:
  - kind: node-crash
    target: zk3
    at: 1s
expect: {mutual_exclusion: ok}
`

func TestEnsembleScenarioValidates(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(ensembleBase))
	if err != nil {
		t.Fatal(err)
	}
	n := sc.Names()
	if strings.Join(n.Servers, ",") != "zk1,zk2,zk3" {
		t.Fatalf("servers %v, want zk1,zk2,zk3", n.Servers)
	}
	five, err := Parse("x.yaml", []byte(strings.Replace(ensembleBase, `zk_servers: "3"`, `zk_servers: "5"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(five.Names().Servers, ","); got != "zk1,zk2,zk3,zk4,zk5" {
		t.Fatalf("five servers: %v", got)
	}
}

// Node crashes name ZooKeeper servers; params are checked with the field
// and a did-you-mean, and persistence is refused for ZooKeeper.
func TestEnsembleScenarioErrors(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"unknown server", "target: zk3", "target: zk4",
			`x.yaml:11:13: faults[0].target: unknown node "zk4"; expected one of zk1, zk2, zk3 (did you mean zk1?)`},
		{"persistence on a zk server", "at: 1s", "at: 1s\n    restart_after: 2s\n    persistence: always",
			`x.yaml:14:18: faults[0].persistence: zk3 is a ZooKeeper server, which logs every write to disk before acknowledging it; persistence applies to Redis nodes only: remove it`},
		{"zk_servers not odd", `zk_servers: "3"`, `zk_servers: "4"`,
			`x.yaml:5:15: params.zk_servers: expected 1, 3 or 5, found "4"`},
		{"zk_servers typo", `zk_servers: "3"`, `zk_server: "3"`,
			`params.zk_server: gozk-lock does not read "zk_server"; expected one of fence_start, stop_on_disconnect, zk_servers, session_timeout, election_time, tick_time, sync_limit, apply_lag (did you mean zk_servers?)`},
		{"bad session timeout", "session_timeout: 4s", "session_timeout: soon",
			`x.yaml:6:20: params.session_timeout: expected a duration between 1ns and 1h, such as 6s, found "soon"`},
		{"apply lag on a server beyond zk_servers", "session_timeout: 4s", "session_timeout: 4s\n  apply_lag: zk2=1s, zk4=1s",
			`x.yaml:7:14: params.apply_lag: unknown server "zk4"; expected one of zk1…zk3 (params.zk_servers is 3)`},
		{"apply lag without a duration", "session_timeout: 4s", "session_timeout: 4s\n  apply_lag: zk2",
			`x.yaml:7:14: params.apply_lag: expected server=duration pairs, comma-separated, such as zk2=1500ms, found "zk2"`},
		{"stop_on_disconnect not a bool", "session_timeout: 4s", "session_timeout: 4s\n  stop_on_disconnect: sometimes",
			`params.stop_on_disconnect: expected true or false`},
		{"unknown metric", "expect: {mutual_exclusion: ok}", "expect: {mutual_exclusion: ok}\nat_most: {watch_notification: 5}",
			`at_most.watch_notification: unknown metric "watch_notification"; expected one of watch_notifications, sessions_expired, elections, messages (did you mean watch_notifications?)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(ensembleBase, c.from) {
				t.Fatalf("edit %q not in the base", c.from)
			}
			_, err := Parse("x.yaml", []byte(strings.Replace(ensembleBase, c.from, c.to, 1)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
		})
	}
}

// A scenario with a Redis node still refuses a server name for it, and a
// ZooKeeper server name is no Redis node.
func TestNodeCrashOnRedisKeepsPersistence(t *testing.T) {
	_, err := Parse("x.yaml", []byte(strings.Replace(base, "kind: pause\n    target: c1\n    at: 1s\n    duration: 2s",
		"kind: node-crash\n    target: zk2\n    at: 1s", 1)))
	if err == nil || !strings.Contains(err.Error(), `faults[0].target: unknown node "zk2"; expected one of A, B`) {
		t.Fatalf("error %v", err)
	}
}

// Without a host for the bubble, a run of a real-client algorithm says
// how to get one.
func TestEnsembleRunNeedsABubbleHost(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(ensembleBase))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(sc, 1, Options{})
	want := "scenario zk-base: algorithm gozk-lock runs real client code (zookeeper-ensemble backend) that needs a testing/synctest bubble, and nothing hosts one here: the locklab command does it by itself; a Go test must call bubblehost.Bind(t)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v", err)
	}
}
