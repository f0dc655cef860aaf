package locktest

// File-system locks: a lock built on files — a lock file, flock(2), an
// fcntl(2) record lock — under the same fault classes, expectations,
// failfiles and reports as a Redis lock. The user's constructor receives
// a file-system handle (*fsnode.Process: a process of the simulated
// kernel, on one host or over an NFSv4 mount; docs/filesystem.md) whose
// calls are the system calls a lock library makes:
//
//	locktest.RunFileSystem(t, locktest.FileSystem{Params: map[string]string{"fs": "nfs"}},
//		func(fs *fsnode.Process) locktest.Lock { ... }, opt)

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/fslock"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim/fsnode"
)

// FileSystem sets up the simulated file system of RunFileSystem.
type FileSystem struct {
	// Params are the filesystem backend's params, as in a scenario file:
	// fs (local or nfs), lease, grace, drc, timeo, pid_reuse. Unknown
	// keys and bad values fail the test with a did-you-mean.
	Params map[string]string
}

// FileFactory builds one client's lock on its file-system handle. It is
// called once per client per run, when the client first locks.
type FileFactory func(fs *fsnode.Process) Lock

// customFileSystem is the hidden algorithm a file-system lock's runs (and
// failfiles) name.
const customFileSystem = "custom-filesystem"

func init() {
	algorithms.Register(algorithms.Info{
		Name:    customFileSystem,
		Summary: "your own lock on the " + fslock.Backend + " backend, supplied by a factory in Go (scenarios/locktest)",
		Backend: fslock.Backend, Hidden: true,
		New: func(algorithms.Params, algorithms.Conns) (algorithms.Lock, error) {
			return nil, errors.New("a custom file-system lock is built by a factory in Go; use package scenarios/locktest")
		},
	})
}

// fsBuilder builds a client's lock on its handle (Conns.Backend).
type fsBuilder struct{ f FileFactory }

func (b fsBuilder) algorithm(ttl time.Duration, renews, fencing bool) algorithms.Factory {
	return func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
		proc, ok := c.Backend.(*fsnode.Process)
		if !ok || proc == nil {
			return nil, fmt.Errorf("locktest: a file-system lock needs the %s backend, got %T", fslock.Backend, c.Backend)
		}
		l := b.f(proc)
		if l == nil {
			return nil, errors.New("locktest: the factory returned a nil Lock")
		}
		return &userLock{lock: l, ttl: ttl, renews: renews, fencing: fencing, mode: p.Extra[algorithms.ParamMode]}, nil
	}
}

// RunFileSystem tests a lock built on the file API as Run tests a Redis
// lock: one subtest per fault class (crash, pause, and over NFS drop,
// delay, partition and restart of the server), each judged against
// opt.Expect, counterexamples shrunk, saved as failfiles and replayed.
func RunFileSystem(t *testing.T, fs FileSystem, f FileFactory, opt Options) {
	t.Helper()
	if f == nil {
		t.Fatal("locktest: RunFileSystem: the factory is nil")
	}
	for _, c := range opt.Classes {
		if c == Stall || c == Failover {
			t.Fatalf("locktest: Options.Classes: %s is not a class of file-system locks; they are %v", c, faults.Classes())
		}
	}
	if len(opt.Classes) == 0 {
		opt.Classes = faults.Classes()
	}
	if err := opt.defaults(); err != nil {
		t.Fatal(err)
	}
	if opt.Nodes > 1 || opt.Replicas > 0 || opt.Persistence != "" {
		t.Fatal("locktest: Options.Nodes, Replicas and Persistence describe Redis nodes; for a file system use FileSystem.Params")
	}
	if err := checkSerial(t); err != nil {
		t.Fatal(err)
	}
	if _, file, line, ok := runtime.Caller(1); ok {
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
	base.Algorithm = customFileSystem
	base.Nodes = nil
	base.Params = maps.Clone(fs.Params)
	if err := base.Validate(); err != nil {
		t.Fatalf("locktest: FileSystem.Params: %v", err)
	}
	for _, c := range opt.Classes {
		if err := runSubtest(t, string(c), func(t *testing.T) { runClass(t, fsBuilder{f}, opt, base, c) }); err != nil {
			t.Fatal(err)
		}
	}
}
