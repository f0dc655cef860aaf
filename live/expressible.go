package live

import (
	"fmt"
	"slices"
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

// Expressible checks, without starting anything, that every part of sc can
// be made live; the error, a *NotExpressible, names every part that cannot.
// docs/live-table.md's "not run live" rows are these reasons.
func Expressible(sc *scenarios.Scenario) error {
	info, err := algorithms.Lookup(sc.Algorithm)
	if err != nil {
		return err
	}
	return expressible(sc, info)
}

// expressible checks, before any server starts, that every part of sc can
// be made with real servers: Redis nodes without replicas, and faults the
// live fabric, the client hosts and the server processes can apply.
func expressible(sc *scenarios.Scenario, info algorithms.Info) error {
	var why []string
	if lb, ok := liveBackends[info.Backend]; ok {
		why = lb.expressible(sc)
	} else {
		why = append(why, fmt.Sprintf("algorithm %s runs on the %s backend, which live mode does not start yet", sc.Algorithm, info.Backend))
	}
	if sc.Clients.Reenter != nil {
		why = append(why, "clients.reenter: the nested acquire and release inside the critical section are not made live yet")
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

// paramsExpressible names every param of sc outside known and the
// algorithm's own params (which its client-side code reads, live or not).
func paramsExpressible(sc *scenarios.Scenario, known []string) []string {
	var why []string
	info, _ := algorithms.Lookup(sc.Algorithm)
	for _, k := range sortedKeys(sc.Params) {
		own := slices.ContainsFunc(info.Params, func(p algorithms.Param) bool { return p.Name == k })
		if !own && !slices.Contains(known, k) {
			why = append(why, fmt.Sprintf("params.%s has no live counterpart yet", k))
		}
	}
	return why
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
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
	case faults.Pause:
		// A stop-the-world pause stops every goroutine of the client. The
		// harness stops the lock's own calls and holds the client's
		// traffic, but a client library's goroutines (go-zookeeper's
		// read deadline, pgx's, the MySQL driver's) run in this process
		// and would go on noticing timeouts mid-pause: the pause would be
		// another fault (docs/live.md).
		if info, _ := algorithms.Lookup(sc.Algorithm); info.Bubble {
			return "a pause of a client whose library runs goroutines of its own (" + info.Backend + ") cannot be made whole in-process: its timers would go on"
		}
		return ""
	case faults.Crash, faults.Hang, faults.Drop, faults.Delay, faults.Partition, faults.Heal:
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
		// Which servers crash live is the backend's to say (its own file
		// registers crashable), not a list of host names here.
		if info, _ := algorithms.Lookup(sc.Algorithm); liveBackends[info.Backend].crashable != nil {
			if mine, why := liveBackends[info.Backend].crashable(sc, f); mine {
				return why
			}
		}
		return "only Redis nodes, zk1, db1 and pgbouncer can crash live so far"
	case faults.Failover:
		return "Sentinel failover needs replicas, which live mode does not start yet"
	}
	return "unknown fault kind"
}
