package algorithms

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// sleepEnv records the sleeps a wait policy asks for.
type sleepEnv struct {
	rng    *rand.Rand
	sleeps []time.Duration
}

func (e *sleepEnv) Now() time.Time            { return time.Time{} }
func (e *sleepEnv) Sleep(d time.Duration)     { e.sleeps = append(e.sleeps, d) }
func (e *sleepEnv) Rand() *rand.Rand          { return e.rng }
func (e *sleepEnv) Context() context.Context  { return context.Background() }
func (e *sleepEnv) Parallel(fns ...func(Env)) {}
func (e *sleepEnv) Go(fn func(Env))           {}

// busyFor is a try that finds the lock held n times, then gets it.
func busyFor(n int) func() (*Lease, error) {
	return func() (*Lease, error) {
		if n > 0 {
			n--
			return nil, ErrNotAcquired
		}
		return &Lease{}, nil
	}
}

// The pauses between tries: fixed, every Delay; exponential, Delay doubled
// after every failed try up to Max (redislock's ExponentialBackoff), a
// Max below Delay meaning Delay.
func TestWaitPolicyPauses(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		p    WaitPolicy
		want []time.Duration
	}{
		{"fixed", WaitPolicy{Delay: 100 * ms}, []time.Duration{100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms}},
		{"fixed ignores max", WaitPolicy{Delay: 100 * ms, Max: time.Second}, []time.Duration{100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms}},
		{"exponential", WaitPolicy{Delay: 100 * ms, Backoff: BackoffExponential, Max: time.Second}, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}},
		{"exponential, max not a power of two of delay", WaitPolicy{Delay: 100 * ms, Backoff: BackoffExponential, Max: 300 * ms}, []time.Duration{100 * ms, 200 * ms, 300 * ms, 300 * ms, 300 * ms, 300 * ms}},
		{"exponential, max below delay", WaitPolicy{Delay: 100 * ms, Backoff: BackoffExponential, Max: 50 * ms}, []time.Duration{100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms}},
	} {
		env := &sleepEnv{rng: rand.New(rand.NewPCG(1, 2))}
		if l, err := c.p.Retry(env, busyFor(6)); l == nil || err != nil {
			t.Fatalf("%s: Retry = %v, %v; want a lease after 6 busy tries", c.name, l, err)
		}
		if !slices.Equal(env.sleeps, c.want) {
			t.Errorf("%s: sleeps %v, want %v", c.name, env.sleeps, c.want)
		}
	}
}

// Jitter comes on top of the backoff, one draw per pause whatever the
// backoff: a fixed and an exponential policy draw the same jitter from
// the same source, so the catalogue's runs (fixed) draw exactly what they
// drew before backoff existed.
func TestWaitPolicyJitterOnTopOfBackoff(t *testing.T) {
	ms := time.Millisecond
	fixed := &sleepEnv{rng: rand.New(rand.NewPCG(7, 7))}
	expo := &sleepEnv{rng: rand.New(rand.NewPCG(7, 7))}
	WaitPolicy{Delay: 100 * ms, Jitter: 50 * ms}.Retry(fixed, busyFor(5))
	WaitPolicy{Delay: 100 * ms, Jitter: 50 * ms, Backoff: BackoffExponential, Max: 400 * ms}.Retry(expo, busyFor(5))
	base := []time.Duration{100 * ms, 200 * ms, 400 * ms, 400 * ms, 400 * ms}
	for i := range base {
		j := fixed.sleeps[i] - 100*ms
		if j < 0 || j >= 50*ms {
			t.Fatalf("fixed pause %d = %v, want 100ms + [0, 50ms)", i, fixed.sleeps[i])
		}
		if expo.sleeps[i] != base[i]+j {
			t.Errorf("exponential pause %d = %v, want %v + the same jitter %v", i, expo.sleeps[i], base[i], j)
		}
	}
}

// Attempts still bounds the tries under exponential backoff.
func TestWaitPolicyExponentialAttempts(t *testing.T) {
	env := &sleepEnv{rng: rand.New(rand.NewPCG(1, 2))}
	_, err := WaitPolicy{Attempts: 3, Delay: time.Millisecond, Backoff: BackoffExponential, Max: time.Second}.Retry(env, busyFor(10))
	if err != ErrNotAcquired || len(env.sleeps) != 2 {
		t.Fatalf("Retry = %v after %d pauses; want ErrNotAcquired after 2", err, len(env.sleeps))
	}
}
