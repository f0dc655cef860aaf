package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

func TestAtMostErrorsNameFileLineAndMetric(t *testing.T) {
	zk := "id: q\nalgorithm: zk-queue\nttl: 6s\nclients: {count: 2}\nat_most:\n  watch_notification: 1\n"
	for _, c := range []struct{ data, want string }{
		{zk, `q.yaml:6:23: at_most.watch_notification: unknown metric "watch_notification"; expected one of watch_notifications, sessions_expired, elections, zk_client_messages (did you mean watch_notifications?)`},
		{strings.Replace(zk, "watch_notification: 1", "watch_notifications: -1", 1), `q.yaml:6:24: at_most.watch_notifications: expected a whole number >= 0, found "-1"`},
		{"id: r\nalgorithm: set-nx-px-lua\nttl: 6s\nnodes: [A]\nclients: {count: 2}\nat_most: {watch_notifications: 1}\n", `q.yaml:6:32: at_most.watch_notifications: the redis backend reports no metrics to bound`},
	} {
		_, err := scenarios.Parse("q.yaml", []byte(c.data))
		if err == nil || err.Error() != c.want {
			t.Errorf("error %v\nwant  %s", err, c.want)
		}
	}
}

func TestAtMostIsPartOfTheMatch(t *testing.T) {
	bubblehost.Bind(t)
	s := mustGet(t, "zk-queue-no-herd")
	if s.AtMost["watch_notifications"] != 100 {
		t.Fatalf("at_most %v", s.AtMost)
	}
	r := mustRun(t, s, s.Seed, Options{NoTrace: true})
	if n, _ := r.Metric("watch_notifications"); n != 100 || !r.Matches() {
		t.Fatalf("%d watch notifications, matches %v; want 100 and a match", n, r.Matches())
	}
	// The same run judged against a tighter bound, and against a bound on
	// a metric the run did not report, does not match.
	for _, bound := range []map[string]int64{{"watch_notifications": 99}, {"sessions_expired": 0, "no_such_metric": 1}} {
		tight := *s
		tight.AtMost = bound
		r.Scenario = &tight
		if r.Matches() {
			t.Errorf("at_most %v: the run matches", bound)
		}
	}
	r.Scenario = &scenarios.Scenario{AtMost: map[string]int64{"watch_notifications": 99, "sessions_expired": 0}}
	if got := r.MetricsOverBound(); !slices.Equal(got, []string{"watch_notifications"}) {
		t.Errorf("over bound %v", got)
	}
}
