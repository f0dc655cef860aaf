package locktest

// Semaphores and reader-writer locks under the same fault classes as a
// mutex. A semaphore of N permits is safe while at most N clients hold at
// once; a reader-writer lock while a writer overlaps nobody (readers may
// overlap each other). The checker judges both (package checker), the
// witness names every overlapping holder, and the outcomes are the same
// as Run's: MutualExclusion means "more holders than the primitive
// allows". Holders of a semaphore's permits and readers only read the
// protected resource; only writers write it.

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/locklab/locklab/scenarios"
	"github.com/redis/go-redis/v9"
)

// RunSemaphore tests a semaphore of permits permits as Run tests a mutex:
// f builds one client's handle, whose Lock takes a permit and Unlock gives
// it back.
func RunSemaphore(t *testing.T, f Factory, permits int, opt Options) {
	t.Helper()
	if permits < 1 {
		t.Fatalf("locktest: RunSemaphore: permits: expected a number >= 1, got %d", permits)
	}
	runShared(t, f, opt, func(sc *scenarios.Scenario) { sc.Clients.Permits = permits })
}

// RWLock is a reader-writer lock as its users call it, in the shape of
// sync.RWMutex: Lock and Unlock for a writer, RLock and RUnlock for a
// reader.
type RWLock interface {
	Lock
	RLock(ctx context.Context) error
	RUnlock(ctx context.Context) error
}

// RWFactory builds one client's handle on the reader-writer lock.
type RWFactory func(clients []*redis.Client) RWLock

// ReaderWriterModes is the modes RunReadWrite gives its clients, in turn:
// c1 and c2 read, c3 writes, c4 and c5 read, c6 writes, and so on — so
// that every drawn workload (two clients or more) has readers that may
// share the lock and, from three clients on, a writer that may not.
var ReaderWriterModes = []string{scenarios.ModeRead, scenarios.ModeRead, scenarios.ModeWrite}

// RunReadWrite tests a reader-writer lock as Run tests a mutex: each
// client takes the read or the write side as ReaderWriterModes says, and
// explore and shrinking keep those modes.
func RunReadWrite(t *testing.T, f RWFactory, opt Options) {
	t.Helper()
	modal := func(clients []*redis.Client) Lock { return &rwSide{rw: f(clients)} }
	runShared(t, modal, opt, func(sc *scenarios.Scenario) {
		if sc.Clients.Each == nil {
			sc.Clients.Each = map[string]scenarios.Client{}
		}
		for i, name := range sc.ClientNames() {
			c := sc.Clients.Each[name]
			m := ReaderWriterModes[i%len(ReaderWriterModes)]
			c.Mode = &m
			sc.Clients.Each[name] = c
		}
	})
}

// modeKey carries a client's declared mode in the context the harness
// hands to Lock and Unlock.
type modeKey struct{}

// rwSide is a client's handle on a reader-writer lock, taken on the side
// the client declared.
type rwSide struct {
	rw   RWLock
	read bool // the side of the current hold
}

func (s *rwSide) Lock(ctx context.Context) error {
	s.read = ctx.Value(modeKey{}) == scenarios.ModeRead
	if s.read {
		return s.rw.RLock(ctx)
	}
	return s.rw.Lock(ctx)
}

func (s *rwSide) Unlock(ctx context.Context) error {
	if s.read {
		return s.rw.RUnlock(ctx)
	}
	return s.rw.Unlock(ctx)
}

// runShared is Run, RunSemaphore and RunReadWrite: the base setup adjusted
// by shape (permits, modes; nil for a mutex), one subtest per class.
func runShared(t *testing.T, f Factory, opt Options, shape func(*scenarios.Scenario)) {
	t.Helper()
	if err := opt.refuseForeign(routeRedis); err != nil {
		t.Fatal(err)
	}
	if err := opt.defaults(); err != nil {
		t.Fatal(err)
	}
	if err := checkSerial(t); err != nil {
		t.Fatal(err)
	}
	// The user's test called Run, RunSemaphore or RunReadWrite, which
	// called this.
	if _, file, line, ok := runtime.Caller(2); ok {
		opt.caller = fmt.Sprintf("%s:%d", filepath.Base(file), line)
	}
	if *flagSeed != 0 {
		opt.Seed = *flagSeed
	}
	if *flagRuns > 0 {
		opt.Runs = *flagRuns
	}
	base, err := opt.base()
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	if shape != nil {
		shape(base)
		if err := base.Validate(); err != nil {
			t.Fatalf("locktest: %v", err)
		}
	}
	for _, c := range opt.Classes {
		if err := runSubtest(t, string(c), func(t *testing.T) { runClass(t, f, opt, base, c) }); err != nil {
			t.Fatal(err)
		}
	}
}
