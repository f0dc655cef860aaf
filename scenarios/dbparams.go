package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim/dbnet"
)

// The params the database backends (Postgres, MySQL) share: the servers'
// TCP keepalive, whole numbers and durations in a range, and lists of
// client names. Each backend's file says what its own params mean.

// wholeNumber accepts a whole number in [lo, hi].
func wholeNumber(lo, hi int, example string) func(string) error {
	return func(v string) error {
		if n, err := strconv.Atoi(v); err != nil || n < lo || n > hi {
			return fmt.Errorf("expected a whole number between %d and %d, such as %s", lo, hi, example)
		}
		return nil
	}
}

// durationAtLeast accepts a duration between min and 24h.
func durationAtLeast(min time.Duration, example string) func(string) error {
	return func(v string) error {
		if d, err := faults.ParseDuration(v); err != nil || d.D() < min || d.D() > 24*time.Hour {
			return fmt.Errorf("expected a duration between %v and 24h, such as %s", min, example)
		}
		return nil
	}
}

// keepaliveParams are the servers' TCP keepalive settings (Linux's
// tcp_keepalive_time, _intvl and _probes; both servers use the kernel's
// unless told otherwise).
func keepaliveParams() []algorithms.Param {
	return []algorithms.Param{
		{Name: "keepalive_idle", Expect: "a duration such as 10s", Check: durationAtLeast(time.Millisecond, "10s")},
		{Name: "keepalive_interval", Expect: "a duration such as 2s", Check: durationAtLeast(time.Millisecond, "2s")},
		{Name: "keepalive_count", Expect: "a whole number between 1 and 100", Check: wholeNumber(1, 100, "9")},
	}
}

// keepaliveOf is the servers' keepalive a scenario asks for.
func keepaliveOf(sc *Scenario) dbnet.Keepalive {
	return dbnet.Keepalive{
		Idle:     paramDuration(sc, "keepalive_idle", dbnet.LinuxKeepalive.Idle),
		Interval: paramDuration(sc, "keepalive_interval", dbnet.LinuxKeepalive.Interval),
		Count:    paramInt(sc, "keepalive_count", dbnet.LinuxKeepalive.Count),
	}
}

// clientList is a param naming clients, comma-separated.
func clientList(sc *Scenario, key string) []string {
	var out []string
	for _, c := range strings.Split(sc.Params[key], ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// checkClientList refuses a name in a client-list param that is not one of
// the scenario's clients, with a did-you-mean.
func checkClientList(s *Scenario, key string, bad func(field, format string, args ...any)) {
	names := s.ClientNames()
	for _, c := range clientList(s, key) {
		if !slices.Contains(names, c) {
			msg := fmt.Sprintf("unknown client %q; expected one of %s", c, strings.Join(names, ", "))
			if m := DidYouMean(c, names); m != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", m)
			}
			bad("params."+key, "%s", msg)
		}
	}
}

// paramDuration reads a duration param (validated before the run).
func paramDuration(sc *Scenario, key string, def time.Duration) time.Duration {
	if v, ok := sc.Params[key]; ok {
		if d, err := faults.ParseDuration(v); err == nil && d > 0 {
			return d.D()
		}
	}
	return def
}

func paramInt(sc *Scenario, key string, def int) int {
	if n, err := strconv.Atoi(sc.Params[key]); err == nil && n > 0 {
		return n
	}
	return def
}
