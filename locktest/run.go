package locktest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	mathrand "math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
)

var (
	flagSeed   = flag.Uint64("locktest.seed", 0, "locktest: seed of the random runs (0: Options.Seed)")
	flagRuns   = flag.Int("locktest.runs", 0, "locktest: random runs per fault class (0: Options.Runs)")
	flagReplay = flag.String("locktest.replay", "", "locktest: replay this counterexample file and print its witness")
	flagReport = flag.String("locktest.report", "", "locktest: write the HTML report of each counterexample to this file (the class is added before the extension)")
)

// userLock adapts a Lock to the harness's algorithms.Lock. The lock's code
// runs outside the kernel, where its goroutines and timers live.
type userLock struct {
	lock    Lock
	ttl     time.Duration
	renews  bool
	fencing bool
	// mode is the client's declared hold, "read" or "write", for a
	// reader-writer lock (RunReadWrite); it travels in the context.
	mode string
	// released ends the loss watcher of the current hold.
	released chan struct{}
}

type outsider interface{ Outside(func()) }

func outside(env algorithms.Env, fn func()) {
	if o, ok := env.(outsider); ok {
		o.Outside(fn)
		return
	}
	fn()
}

func (u *userLock) ctx(env algorithms.Env) context.Context {
	ctx := context.WithValue(env.Context(), randKey{}, env.Rand())
	if u.mode != "" {
		ctx = context.WithValue(ctx, modeKey{}, u.mode)
	}
	return ctx
}

func (u *userLock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	start := env.Now()
	ctx := u.ctx(env)
	var (
		err   error
		fence int64
	)
	outside(env, func() {
		if tl, ok := u.lock.(TokenLock); ok && u.fencing {
			fence, err = tl.LockToken(ctx)
		} else {
			err = u.lock.Lock(ctx)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", algorithms.ErrNotAcquired, err)
	}
	validity := start.Add(u.ttl)
	if u.renews {
		// A renewed lease has no deadline the client consults: it holds
		// until it unlocks, crashes or the run ends.
		validity = start.Add(100 * 365 * 24 * time.Hour)
	}
	lease := &algorithms.Lease{Resource: "lock", Start: start, Validity: validity, FencingToken: fence}
	if lr, ok := u.lock.(LossReporter); ok {
		u.watchLoss(env, lr.Lost(), lease)
	}
	return lease, nil
}

type notifier interface{ Notify(func()) }

// watchLoss marks the lease lost when the lock reports it; the goroutine
// ends with the hold (Release) or the client's context.
func (u *userLock) watchLoss(env algorithms.Env, lost <-chan struct{}, lease *algorithms.Lease) {
	n, ok := env.(notifier)
	if !ok || lost == nil {
		return
	}
	done := env.Context().Done()
	released := make(chan struct{})
	u.released = released
	go func() {
		select {
		case <-lost:
			n.Notify(lease.MarkLost)
		case <-released:
		case <-done:
		}
	}()
}

func (u *userLock) Release(env algorithms.Env, l *algorithms.Lease) error {
	if u.released != nil {
		close(u.released)
		u.released = nil
	}
	ctx := u.ctx(env)
	var err error
	outside(env, func() { err = u.lock.Unlock(ctx) })
	return err
}

func (f Factory) algorithm(ttl time.Duration, renews, fencing bool) algorithms.Factory {
	return func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
		return &userLock{lock: f(c.Redis), ttl: ttl, renews: renews, fencing: fencing, mode: p.Extra[algorithms.ParamMode]}, nil
	}
}

// base is the setup every run of Run starts from.
func (o *Options) base() (*scenarios.Scenario, error) {
	sc, err := matrix.Base(algorithms.Custom)
	if err != nil {
		return nil, err
	}
	sc.ID = "locktest"
	sc.Nodes = nil
	for i := 0; i < o.Nodes; i++ {
		name := string(rune('A' + i))
		sc.Nodes = append(sc.Nodes, scenarios.Node{Name: name})
		for r := 1; r <= o.Replicas; r++ {
			sc.Nodes = append(sc.Nodes, scenarios.Node{Name: fmt.Sprintf("%s%d", name, r), Replica: name})
		}
	}
	sc.TTL = scenarios.Duration(o.TTL)
	sc.LivenessBound = scenarios.Duration(2*o.TTL + time.Second)
	if o.Duration > 0 {
		sc.Duration = scenarios.Duration(o.Duration)
	}
	if o.Fencing {
		sc.Resource.TokenCheck = ">"
	}
	sc.Resource.Reliable = !o.FaultStore
	if o.Clients > 0 {
		sc.Clients.Count = o.Clients
	}
	sc.Clients.Cycles = 2
	if o.Cycles > 0 {
		sc.Clients.Cycles = o.Cycles
	}
	if o.Work > 0 {
		sc.Clients.Work, _ = scenarios.ParseRange(fmt.Sprintf("%v..%v", o.Work/2, o.Work))
	}
	return sc, sc.Validate()
}

func (o *Options) keepWorkload() bool { return o.Clients > 0 || o.Cycles > 0 || o.Work > 0 }

// Run tests the lock under every fault class of opt.Classes, one subtest
// per class, inside a synctest bubble, and fails each class whose outcome
// is not opt.Expect's. Subtests run one after another: the lock's
// process-wide random sources (math/rand, crypto/rand) are seeded per run.
func Run(t *testing.T, f Factory, opt Options) {
	t.Helper()
	runShared(t, f, opt, nil)
}

// errInBubble and errParallel say why Run cannot run where it was called.
var (
	errInBubble = errors.New("locktest: Run was called inside a testing/synctest bubble (synctest.Test): Run makes a bubble of its own for each fault class, and bubbles do not nest; call Run directly from the test function")
	errParallel = errors.New("locktest: Run was called in a parallel test (t.Parallel): each run seeds the process-wide random sources (crypto/rand, math/rand) that lock libraries draw from, so two tests running at once would change each other's runs; remove t.Parallel from this test and its parents")
)

// checkSerial refuses a parallel test. testing has no question for it, but
// t.Setenv panics in a parallel test (or one with a parallel parent), for
// the same reason Run cannot run there: it changes the whole process. The
// variable set names the test that seeds the process's random sources.
func checkSerial(t *testing.T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if strings.Contains(fmt.Sprint(r), "synctest") {
				err = errInBubble
				return
			}
			err = errParallel
		}
	}()
	t.Setenv("LOCKTEST_RUNNING", t.Name())
	return nil
}

// runSubtest is t.Run, with testing's panic inside a synctest bubble
// turned into a sentence.
func runSubtest(t *testing.T, name string, fn func(*testing.T)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if !strings.Contains(fmt.Sprint(r), "synctest bubble") {
				panic(r)
			}
			err = errInBubble
		}
	}()
	t.Run(name, fn)
	return nil
}

// replayCommand is the go test line that replays file.
func replayCommand(t *testing.T, file string) string {
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("go test -run '%s' -locktest.replay=%s", strings.Join(parts, "/"), filepath.ToSlash(file))
}

// observe, when set (by tests of this package), sees every class's finding.
var observe func(t *testing.T, class Class, f finding)

var globalRandOnce sync.Once

// seedProcessRandom makes the random sources a library draws from without
// asking — crypto/rand (lock values) and math/rand's global functions
// (redsync's retry delays) — start from the run's seed, so a replay is byte
// for byte the run that failed.
func seedProcessRandom(t *testing.T, seed uint64) {
	cryptotest.SetGlobalRandom(t, seed)
	globalRandOnce.Do(func() {
		// rand.Seed is a no-op since Go 1.24 unless randseednop=0.
		os.Setenv("GODEBUG", strings.Trim(os.Getenv("GODEBUG")+",randseednop=0", ","))
	})
	mathrand.Seed(int64(seed)) //nolint:staticcheck // deterministic library retries need it
}

// replayFile is the counterexample a class replays instead of exploring:
// the -locktest.replay flag, else Options.Replay.
func replayFile(opt Options) string {
	if *flagReplay != "" {
		return *flagReplay
	}
	return opt.Replay
}

// stallLimit is how long, in real time, the kernel may make no progress
// before the watchdog gives up on the run.
const stallLimit = 15 * time.Second

// watchdog runs outside the bubble. synctest.Wait cannot return while a
// goroutine of the bubble waits on something outside it (a real socket, a
// mutex, a channel made outside the bubble): the run would hang until go
// test's timeout. The watchdog notices that the kernel stopped moving,
// says what blocked, and ends the test binary.
func watchdog(name string, stop chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	limit := stallLimit
	if d, err := time.ParseDuration(os.Getenv("LOCKTEST_STALL")); err == nil && d > 0 {
		limit = d // the tests of this package wait less
	}
	last, idle := sim.BubbleProgress.Load(), time.Duration(0)
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if now := sim.BubbleProgress.Load(); now != last {
			last, idle = now, 0
			continue
		}
		if idle += time.Second; idle < limit {
			continue
		}
		blocked := sim.BlockedGoroutines(false)
		if blocked == "" {
			// Nothing waits outside: a goroutine of the lock outlived its
			// run and keeps the bubble's clock running (a ticker that
			// neither Unlock nor the context stops).
			blocked = "    (nothing waits outside the bubble; these goroutines of the lock are still running — stop them when the context passed to Lock is cancelled:)\n" + sim.BlockedGoroutines(true)
		}
		fmt.Fprintf(os.Stderr, "--- FAIL: %s\n    locktest: no progress for %v of real time: the lock waits on something outside the simulation — a real network connection, a mutex, or a channel made outside the test's bubble — or a goroutine of its own never ends. Blocked:\n%s\n",
			name, limit, blocked)
		os.Exit(1)
	}
}
