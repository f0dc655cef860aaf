package scenarios

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/algorithms"
	_ "github.com/locklab/locklab/algorithms/zklock" // registers zk-simple and zk-queue
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/zk"
)

// The ZooKeeper backend: one ensemble host named "zk", and one connection
// per client. Session settings come from the scenario's params:
//
//	session_timeout: 6s   the session timeout the clients ask for
//	lost_after: 6s        how long a client stays SUSPENDED before it reports
//	                      LOST on its own (Curator's default: the session timeout)
//	request_timeout: 4s   how long a request waits for its reply (default:
//	                      2/3 of the session timeout, the client's read timeout)
func init() {
	RegisterBackend("zookeeper", func(*Scenario) []string { return []string{zk.DefaultServerName} }, newZooKeeper)
	positive := func(v string) error {
		if d, err := faults.ParseDuration(v); err != nil || d <= 0 || d.D() > time.Hour {
			return fmt.Errorf("expected a positive duration such as 6s")
		}
		return nil
	}
	backendParams["zookeeper"] = []algorithms.Param{
		{Name: "session_timeout", Expect: "a duration between 2ms and 1h, such as 6s", Check: zkSessionTimeout},
		{Name: "lost_after", Expect: "a duration between 1ns and 1h, such as 6s", Check: positive},
		{Name: "request_timeout", Expect: "a duration between 1ns and 1h, such as 4s", Check: positive},
	}
}

type zooKeeper struct {
	server *zk.Server
	opt    zk.Options
}

func newZooKeeper(w *sim.World, sc *Scenario) (Backend, error) {
	var opt zk.Options
	for _, p := range []struct {
		key string
		dst *time.Duration
	}{{"session_timeout", &opt.SessionTimeout}, {"lost_after", &opt.LostAfter}, {"request_timeout", &opt.RequestTimeout}} {
		v, ok := sc.Params[p.key]
		if !ok {
			continue
		}
		d, err := faults.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("params.%s: expected a positive duration such as 6s, got %q", p.key, v)
		}
		if p.key == "session_timeout" {
			// A session of 1 ns made the server expire and the client
			// reconnect at every instant: the run never ended (issue 25).
			if err := zkSessionTimeout(v); err != nil {
				return nil, fmt.Errorf("params.%s: %v, got %q", p.key, err, v)
			}
		}
		*p.dst = d.D()
	}
	return &zooKeeper{server: zk.NewServer(w, zk.DefaultServerName, nil), opt: opt}, nil
}

func (z *zooKeeper) Connect(h *sim.Host) any { return z.server.Connect(h, z.opt) }

func (z *zooKeeper) Hosts() []*sim.Host { return []*sim.Host{z.server.Host} }

// backendMetrics lists, per backend, the metrics its Metrics reports, for
// validating expect.at_most before a run.
var backendMetrics = map[string][]string{
	"zookeeper": {"watch_notifications", "sessions_expired", "znodes_created", "orphaned_znodes"},
}

func (z *zooKeeper) Metrics() []Metric {
	s := z.server
	return []Metric{
		{Name: "watch_notifications", Value: s.Notifications},
		{Name: "sessions_expired", Value: s.SessionsExpired},
		{Name: "znodes_created", Value: s.NodesCreated},
		{Name: "orphaned_znodes", Value: int64(len(s.Orphans()))},
	}
}
