package runner

import (
	"strconv"
	"time"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/dbnet"
)

// keepaliveOf is the servers' keepalive a scenario asks for.
func keepaliveOf(sc *scenarios.Scenario) dbnet.Keepalive {
	return dbnet.Keepalive{
		Idle:     paramDuration(sc, "keepalive_idle", dbnet.LinuxKeepalive.Idle),
		Interval: paramDuration(sc, "keepalive_interval", dbnet.LinuxKeepalive.Interval),
		Count:    paramInt(sc, "keepalive_count", dbnet.LinuxKeepalive.Count),
	}
}

// paramDuration reads a duration param (validated before the run).
func paramDuration(sc *scenarios.Scenario, key string, def time.Duration) time.Duration {
	if v, ok := sc.Params[key]; ok {
		if d, err := faults.ParseDuration(v); err == nil && d > 0 {
			return d.D()
		}
	}
	return def
}

func paramInt(sc *scenarios.Scenario, key string, def int) int {
	if n, err := strconv.Atoi(sc.Params[key]); err == nil && n > 0 {
		return n
	}
	return def
}
