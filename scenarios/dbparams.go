package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
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

// ClientList is a param naming clients, comma-separated.
func ClientList(sc *Scenario, key string) []string {
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
	for _, c := range ClientList(s, key) {
		if !slices.Contains(names, c) {
			msg := fmt.Sprintf("unknown client %q; expected one of %s", c, strings.Join(names, ", "))
			if m := DidYouMean(c, names); m != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", m)
			}
			bad("params."+key, "%s", msg)
		}
	}
}
