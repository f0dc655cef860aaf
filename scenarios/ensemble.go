package scenarios

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/zklock/gozk" // registers the gozk-* algorithms
	"github.com/locklab/locklab/faults"
)

// The ZooKeeper ensemble backend: the real go-zookeeper client (v1.0.4,
// unmodified) against a simulated ensemble of 1, 3 or 5 servers
// (sim/zk/ensemble) driven by the world's kernel in the bubble runtime.
// The servers are world hosts zk1…zkN, so fault schedules name them:
// node-crash: zk3 crashes a server (its clients reconnect elsewhere within
// their session timeout), a partition [[c1, zk1], [zk2, zk3]] cuts a
// minority off (it stops serving after sync_limit ticks), drop and delay
// act on client connections as TCP does (a lost frame resets the
// connection). Client ci dials server zk((i-1) mod N + 1) first, so c1
// starts on zk1, c2 on zk2, and so on.
//
// Params (ZooKeeper's own defaults when left out, see ensemble.Config):
//
//	zk_servers: 3          1, 3 or 5 servers; zkN is the first leader
//	session_timeout: 6s    the session timeout the clients ask for
//	election_time: 400ms   how long an election takes once a leader is lost
//	tick_time: 2s          ZooKeeper's tickTime (session expiry granularity)
//	sync_limit: 5          ticks before a server cut off from its leader notices
//	apply_lag: zk2=1500ms  how late a server applies committed transactions
//	                       (comma-separated; the CURATOR-604 window)
//
// The queue recipes' replace_handle_on_lost has the backend open a new
// handle for a client (Session.Replace): the old one is closed through
// the ensemble, which so does not close it again when the run ends, and
// the new one dials the next server (c1 then starts on zk2).
func init() {
	b := BackendInfo{Name: gozk.Backend, Hosts: ensembleHostNames, Crashable: true}
	positive := func(v string) error {
		if d, err := faults.ParseDuration(v); err != nil || d <= 0 || d.D() > time.Hour {
			return fmt.Errorf("expected a positive duration such as 6s")
		}
		return nil
	}
	b.Params = []algorithms.Param{
		{Name: "zk_servers", Expect: "1, 3 or 5", Check: algorithms.OneOf("1", "3", "5")},
		{Name: "session_timeout", Expect: "a duration between 2ms and 1h, such as 6s", Check: ZKSessionTimeout},
		{Name: "election_time", Expect: "a duration between 1ns and 1h, such as 400ms", Check: positive},
		{Name: "tick_time", Expect: "a whole number of milliseconds between 1ms and 1h, such as 2s", Check: zkTickTime},
		{Name: "sync_limit", Expect: "a whole number of ticks between 1 and 100, such as 5", Check: func(v string) error {
			if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 100 {
				return fmt.Errorf("expected a whole number of ticks between 1 and 100, such as 5")
			}
			return nil
		}},
		{Name: "apply_lag", Expect: "server=duration pairs, comma-separated, such as zk2=1500ms", Check: func(v string) error {
			_, err := ParseApplyLag(v, 5)
			return err
		}},
	}
	b.Check = func(s *Scenario, bad func(field, format string, args ...any)) {
		// lost_after is the delay of replace_handle_on_lost (the queue
		// recipes check it too, but by then the clients have dialled).
		if _, ok := s.Params["lost_after"]; ok {
			if on, err := strconv.ParseBool(s.Params["replace_handle_on_lost"]); err != nil || !on {
				bad("params.lost_after", "the delay before a client replaces its handle; it needs params.replace_handle_on_lost: true")
			}
		}
		v, ok := s.Params["apply_lag"]
		if !ok {
			return
		}
		if _, err := ParseApplyLag(v, 5); err != nil {
			return // reported by the param's own check
		}
		if _, err := ParseApplyLag(v, ZKServers(s)); err != nil {
			bad("params.apply_lag", "%v (params.zk_servers is %d)", err, ZKServers(s))
		}
	}
	b.Metrics = []string{"watch_notifications", "sessions_expired", "elections", "zk_client_messages"}
	b.ServerRoles = true
	RegisterBackend(b)
}

// zkTickTime checks tick_time as ZooKeeper reads tickTime: a whole number
// of milliseconds (zoo.cfg's tickTime is an int of ms), at least 1. A
// smaller one made the negotiated session (2 ticks at least) so short that
// go-zookeeper's ping ticker got a zero interval and panicked.
func zkTickTime(v string) error {
	d, err := faults.ParseDuration(v)
	if err != nil || d.D() < time.Millisecond || d.D() > time.Hour || d.D()%time.Millisecond != 0 {
		return fmt.Errorf("expected a whole number of milliseconds between 1ms and 1h (ZooKeeper's tickTime is an int of ms), such as 2s")
	}
	return nil
}

// ZKSessionTimeout checks a requested session timeout against the smallest
// any ZooKeeper server grants: minSessionTimeout is 2 × tickTime and
// tickTime is at least 1 ms, so no session is shorter than 2 ms (the
// ensemble then raises a request to 2 × its own tickTime, as servers do).
func ZKSessionTimeout(v string) error {
	d, err := faults.ParseDuration(v)
	if err != nil || d.D() < 2*time.Millisecond || d.D() > time.Hour {
		return fmt.Errorf("expected a duration between 2ms and 1h, such as 6s (no ZooKeeper server grants a session shorter than 2 × tickTime, and tickTime is at least 1ms)")
	}
	return nil
}

// DefaultSessionTimeout is what clients ask for when the scenario does
// not say: Curator's default connection timeout is 15 s, its session
// timeout 60 s; 6 s keeps runs short and is the catalogue's usual value.
const DefaultSessionTimeout = 6 * time.Second

// ZKServers is the ensemble's size from params.zk_servers (3 if absent or
// not 1, 3 or 5; Validate reports the bad value).
func ZKServers(sc *Scenario) int {
	switch sc.Params["zk_servers"] {
	case "1":
		return 1
	case "5":
		return 5
	}
	return 3
}

func ensembleHostNames(sc *Scenario) []string {
	var out []string
	for i := 1; i <= ZKServers(sc); i++ {
		out = append(out, fmt.Sprintf("zk%d", i))
	}
	return out
}

// ParseApplyLag reads "zk2=1500ms, zk3=200ms" into server index (1-based)
// → lag, refusing servers beyond n.
func ParseApplyLag(v string, n int) (map[int]time.Duration, error) {
	out := map[int]time.Duration{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, dur, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("expected server=duration such as zk2=1500ms, found %q", part)
		}
		name = strings.TrimSpace(name)
		id, err := strconv.Atoi(strings.TrimPrefix(name, "zk"))
		if !strings.HasPrefix(name, "zk") || err != nil || id < 1 || id > n {
			if n == 1 {
				return nil, fmt.Errorf("unknown server %q; expected zk1", name)
			}
			return nil, fmt.Errorf("unknown server %q; expected one of zk1…zk%d", name, n)
		}
		d, err := faults.ParseDuration(strings.TrimSpace(dur))
		if err != nil || d < 0 || d.D() > time.Hour {
			return nil, fmt.Errorf("%s: expected a duration between 0 and 1h such as 1500ms, found %q", name, dur)
		}
		out[id] = d.D()
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("expected server=duration such as zk2=1500ms, found %q", v)
	}
	return out, nil
}
