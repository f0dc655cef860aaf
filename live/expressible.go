package live

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
)

// NotExpressible is the answer for a scenario a live run cannot make as
// written: every reason is named, and nothing is silently left out.
type NotExpressible struct {
	Scenario string
	Reasons  []string
}

func (e *NotExpressible) Error() string {
	return fmt.Sprintf("scenario %s is not expressible live:\n  - %s", e.Scenario, strings.Join(e.Reasons, "\n  - "))
}

// expressible checks, before any server starts, that every part of sc can
// be made with real servers: Redis nodes without replicas, and faults the
// live fabric, the client hosts and the server processes can apply.
func expressible(sc *scenarios.Scenario, info algorithms.Info) error {
	var why []string
	if info.Backend != "redis" {
		why = append(why, fmt.Sprintf("algorithm %s runs on the %s backend; live mode starts Redis servers only so far (ZooKeeper, Postgres and MariaDB are not wired yet)", sc.Algorithm, info.Backend))
	}
	for _, n := range sc.Nodes {
		if n.Replica != "" {
			why = append(why, fmt.Sprintf("node %s replicates from %s: replication between live servers is not wired yet", n.Name, n.Replica))
		}
		if n.Offset != 0 || n.PPM != 0 {
			why = append(why, fmt.Sprintf("node %s has a clock offset or rate: a live redis-server runs on the host's clock (libfaketime cannot be loaded into redis-server, see docs/live.md)", n.Name))
		}
		if n.MinReplicasToWrite > 0 {
			why = append(why, fmt.Sprintf("node %s sets min_replicas_to_write, which needs replicas", n.Name))
		}
	}
	for i, f := range sc.Faults {
		if r := faultExpressible(sc, f); r != "" {
			why = append(why, fmt.Sprintf("faults[%d] (%s): %s", i, f.String(), r))
		}
	}
	if len(why) > 0 {
		return &NotExpressible{Scenario: sc.ID, Reasons: why}
	}
	return nil
}

// faultExpressible says why f cannot be made live, or "".
func faultExpressible(sc *scenarios.Scenario, f faults.Fault) string {
	isNode := func(name string) bool {
		for _, n := range sc.Nodes {
			if n.Name == name {
				return true
			}
		}
		return false
	}
	switch f.Kind {
	case faults.Pause, faults.Crash, faults.Hang, faults.Drop, faults.Delay, faults.Partition, faults.Heal:
		return ""
	case faults.ClockJump:
		if f.Target == scenarios.ResourceHost {
			return "the store has no clock that matters"
		}
		return ""
	case faults.Drift:
		if isNode(f.Target) {
			return "a live redis-server's clock cannot be made to run at another rate (libfaketime cannot be loaded into redis-server)"
		}
		return ""
	case faults.NodeCrash:
		if !isNode(f.Target) {
			return "only Redis nodes can crash live"
		}
		if f.Persistence != "" && f.Persistence != "none" {
			return "restart with persistence " + f.Persistence + " is not wired yet (a live node restarts empty)"
		}
		return ""
	case faults.Failover:
		return "Sentinel failover needs replicas, which live mode does not start yet"
	}
	return "unknown fault kind"
}
