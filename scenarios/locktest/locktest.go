// Package locktest puts your own Redis lock under locklab's faults from a
// Go test. You give it a factory that builds one client's lock from its
// go-redis clients (one per simulated Redis node); it explores random fault
// schedules and workloads — clocks that jump, replies that are lost, clients
// that pause — checks mutual exclusion, resource safety and liveness, and on
// a violation fails the test with a minimal counterexample and the line that
// replays it:
//
//	func TestMyLock(t *testing.T) {
//		locktest.Check(t, func(clients []*redis.Client) locktest.Lock {
//			return mylock.New(clients[0], "orders", 5*time.Second)
//		}, locktest.Options{TTL: 5 * time.Second})
//	}
//
// The lock's code runs unmodified, over ordinary go-redis clients whose
// connections are simulated. It must not start goroutines of its own or wait
// on timers (a retry loop with time.Sleep): simulated time does not pass
// while it waits. Retrying is the harness's job, so configure no retries.
// For byte-identical replays, draw any random token from Token(ctx).
package locktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/redis/go-redis/v9"
)

// Lock is the lock under test, as its users call it.
type Lock interface {
	// Lock takes the lock once; an error (busy, timeout) means not taken,
	// and the harness tries again a little later.
	Lock(ctx context.Context) error
	// Unlock releases it.
	Unlock(ctx context.Context) error
}

// Funcs adapts two functions to Lock.
type Funcs struct {
	LockFunc   func(ctx context.Context) error
	UnlockFunc func(ctx context.Context) error
}

func (f Funcs) Lock(ctx context.Context) error   { return f.LockFunc(ctx) }
func (f Funcs) Unlock(ctx context.Context) error { return f.UnlockFunc(ctx) }

// Factory builds one client's lock from its connections: one go-redis
// client per simulated Redis node, in node order.
type Factory func(clients []*redis.Client) Lock

// Options tune Check.
type Options struct {
	// TTL is the lease your lock takes. A client believes it holds the
	// lock from the return of Lock until it calls Unlock, or until TTL after
	// it called Lock, whichever comes first. Required.
	TTL time.Duration
	// Faults are the fault classes to draw from (default: all of them).
	Faults []faults.Class
	// Nodes is the number of Redis nodes (default 1; 5 for a Redlock).
	Nodes int
	// Runs is the number of random runs (default 200).
	Runs int
	// Seed picks the runs (default 1).
	Seed uint64
	// Workers run in parallel (default: all cores).
	Workers int
}

type randKey struct{}

// Token returns a random token drawn from the run's seeded source, for
// locks that accept a caller-supplied token: tokens from crypto/rand make
// every replay's trace differ (its verdict does not).
func Token(ctx context.Context) string {
	if r, ok := ctx.Value(randKey{}).(*rand.Rand); ok {
		return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
	}
	return fmt.Sprintf("%016x", rand.Uint64())
}

// userLock adapts a Lock to algorithms.Lock.
type userLock struct {
	lock Lock
	ttl  time.Duration
}

func (u *userLock) ctx(env algorithms.Env) context.Context {
	return context.WithValue(env.Context(), randKey{}, env.Rand())
}

func (u *userLock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	start := env.Now()
	if err := u.lock.Lock(u.ctx(env)); err != nil {
		return nil, fmt.Errorf("%w: %v", algorithms.ErrNotAcquired, err)
	}
	return &algorithms.Lease{Resource: "lock", Start: start, Validity: start.Add(u.ttl)}, nil
}

func (u *userLock) Release(env algorithms.Env, l *algorithms.Lease) error {
	return u.lock.Unlock(u.ctx(env))
}

func (o *Options) defaults() error {
	if o.TTL <= 0 {
		return errors.New("locktest: Options.TTL: expected the TTL your lock uses, such as 5*time.Second")
	}
	if o.Nodes <= 0 {
		o.Nodes = 1
	}
	if o.Runs <= 0 {
		o.Runs = 200
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if len(o.Faults) == 0 {
		o.Faults = faults.Classes()
	}
	return nil
}

// base is the setup runs start from: Nodes Redis nodes, the TTL, the matrix
// workload.
func (o *Options) base() (*scenarios.Scenario, error) {
	sc, err := scenarios.MatrixScenario(algorithms.Custom)
	if err != nil {
		return nil, err
	}
	sc.Nodes = nil
	for i := 0; i < o.Nodes; i++ {
		sc.Nodes = append(sc.Nodes, scenarios.Node{Name: string(rune('A' + i))})
	}
	sc.TTL = scenarios.Duration(o.TTL)
	sc.LivenessBound = scenarios.Duration(2*o.TTL + time.Second)
	return sc, sc.Validate()
}

func (f Factory) algorithm(ttl time.Duration) algorithms.Factory {
	return func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
		return &userLock{lock: f(c.Redis), ttl: ttl}, nil
	}
}

// Explore runs the exploration and returns what it found, without failing
// anything: for reports, and for tests that document which faults break a
// lock.
func Explore(f Factory, opt Options) (*scenarios.ExploreResult, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	base, err := opt.base()
	if err != nil {
		return nil, err
	}
	return scenarios.Explore(scenarios.ExploreOptions{
		Algorithm: algorithms.Custom,
		Factory:   f.algorithm(opt.TTL),
		Base:      base,
		Classes:   opt.Faults,
		Runs:      opt.Runs,
		Seed:      opt.Seed,
		Workers:   opt.Workers,
	})
}

// Check explores random faults against the lock and fails t with a minimal
// counterexample if any run violates mutual exclusion, resource safety or
// liveness.
func Check(t testing.TB, f Factory, opt Options) {
	t.Helper()
	res, err := Explore(f, opt)
	if err != nil {
		t.Fatalf("locktest: %v", err)
		return
	}
	if len(res.Findings) == 0 {
		t.Logf("locktest: no violation in %d runs (faults %v, seed %d)", res.Runs, opt.Faults, opt.Seed)
		return
	}
	t.Error(Describe(res, t.Name()))
}

// Describe renders a finding as a failure message: the violated property,
// the minimal schedule, the witness and how to replay it. It saves the
// counterexample in a file named after the test.
func Describe(res *scenarios.ExploreResult, name string) string {
	f := res.Findings[0]
	min, mres := f.Minimal, f.MinimalResult
	if min == nil {
		min, mres = f.Scenario, f.Result
	}
	var b strings.Builder
	fmt.Fprintf(&b, "locktest: %s violated in run %d of %d; shrunk to %d fault(s), %d client(s):\n",
		strings.ReplaceAll(f.Property, "_", " "), f.Run, res.Runs, len(min.Faults), min.Clients.Count)
	for _, fl := range min.Faults {
		fmt.Fprintf(&b, "    %s\n", fl.String())
	}
	w := mres.Report.Witness
	if w.MutualExclusion != nil {
		fmt.Fprintf(&b, "  witness: %s\n", w.MutualExclusion)
	}
	if w.Resource != nil {
		fmt.Fprintf(&b, "  witness: %s\n", w.Resource)
	}
	if w.Liveness != nil {
		fmt.Fprintf(&b, "  witness: %s\n", w.Liveness)
	}
	safe := strings.NewReplacer("/", "-", " ", "_").Replace(name)
	path := filepath.Join(os.TempDir(), "locklab-"+safe+".yaml")
	if data, err := min.Marshal(); err == nil && os.WriteFile(path, data, 0o644) == nil {
		fmt.Fprintf(&b, "  replay:  locktest.Replay(t, factory, opts, %q)\n", path)
	}
	return b.String()
}

// Replay runs a saved counterexample against the lock and fails t unless
// it reproduces the violation the file records.
func Replay(t testing.TB, f Factory, opt Options, file string) *scenarios.Result {
	t.Helper()
	if err := opt.defaults(); err != nil {
		t.Fatalf("locktest: %v", err)
	}
	sc, err := scenarios.Load(file)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	res, err := scenarios.Run(sc, sc.Seed, scenarios.Options{Factory: f.algorithm(opt.TTL)})
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	if !res.Matches() {
		t.Errorf("locktest: %s did not reproduce: verdict %+v, expected %+v", file, res.Report.Verdict, sc.Expect)
	}
	return res
}
