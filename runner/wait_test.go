package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
)

// The wait policy's backoff in a file: exponential with its cap reaches
// the algorithm's WaitPolicy, the cap defaults to 1s, and a file without
// backoff keeps the fixed delay (every catalogue file).
func TestWaitBackoffParses(t *testing.T) {
	for _, c := range []struct {
		wait string
		want algorithms.WaitPolicy
	}{
		{"", algorithms.WaitPolicy{Delay: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}},
		{"wait: {backoff: fixed, delay: 20ms}\n", algorithms.WaitPolicy{Delay: 20 * time.Millisecond, Jitter: 50 * time.Millisecond, Backoff: algorithms.BackoffFixed}},
		{"wait: {backoff: exponential}\n", algorithms.WaitPolicy{Delay: 100 * time.Millisecond, Jitter: 50 * time.Millisecond, Backoff: algorithms.BackoffExponential, Max: time.Second}},
		{"wait: {backoff: exponential, delay: 10ms, jitter: 5ms, max: 640ms}\n", algorithms.WaitPolicy{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Backoff: algorithms.BackoffExponential, Max: 640 * time.Millisecond}},
	} {
		s, err := scenarios.Parse("x.yaml", []byte(base+c.wait))
		if err != nil {
			t.Fatalf("%q: %v", c.wait, err)
		}
		if got := s.LockParams("c1").Wait; got != c.want {
			t.Errorf("%q: wait policy %+v, want %+v", c.wait, got, c.want)
		}
		// What locklab writes (a counterexample) reads back the same.
		b, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := scenarios.Parse("again.yaml", b)
		if err != nil {
			t.Fatalf("%q: marshalled file does not parse: %v\n%s", c.wait, err, b)
		}
		if again.Wait != s.Wait {
			t.Errorf("%q: round trip gave wait %+v, want %+v", c.wait, again.Wait, s.Wait)
		}
	}
}

// Bad wait policies are one-line errors naming file:line:col, the field,
// what was expected and, for a typo, what was meant.
func TestWaitBackoffErrors(t *testing.T) {
	for _, c := range []struct{ wait, want string }{
		{"wait: {backoff: exponental}\n", `x.yaml:15:17: wait.backoff: expected fixed or exponential, found "exponental" (did you mean exponential?)`},
		{"wait: {backoff: linear}\n", `x.yaml:15:17: wait.backoff: expected fixed or exponential, found "linear"`},
		{"wait: {max: 1s}\n", `x.yaml:15:13: wait.max: caps an exponential backoff, but wait.backoff is fixed (the default); expected wait.backoff: exponential, or no max`},
		{"wait: {backoff: exponential, delay: 2s}\n", `x.yaml:15:1: wait.max: expected a cap at least wait.delay (2s), found 1s (wait.max defaults to 1s)`},
		{"wait: {backoff: exponential, delay: 200ms, max: 100ms}\n", `x.yaml:15:49: wait.max: expected a cap at least wait.delay (200ms), found 100ms`},
		{"wait: {backoff: exponential, max: 2h}\n", `x.yaml:15:35: wait.max: expected a duration between 0s and 1h`},
		{"wait: {backoff: exponential, maxx: 1s}\n", `x.yaml:15:30: wait.maxx: unknown field "maxx"; expected one of attempts, delay, jitter, backoff, max (did you mean max?)`},
	} {
		_, err := scenarios.Parse("x.yaml", []byte(base+c.wait))
		if err == nil {
			t.Errorf("%q: accepted, want %q", c.wait, c.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %q\nwant %q (one line)", c.wait, err, c.want)
		}
	}
}
