// This file is the first locktest API, kept for its users: Check explores
// every fault class at once under the baton scheduler, so the lock must not
// start goroutines or sleep on timers. New tests should use Run.

package locktest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/explore"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/matrix"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// CheckOptions tune Check.
//
// Deprecated: use Options and Run.
type CheckOptions struct {
	// TTL is the lease your lock takes (faults are scaled to it). A client
	// holds the lock from the return of Lock until it calls Unlock or
	// crashes: the deadline does not end a hold it never consults. Required.
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

func (o *CheckOptions) defaults() error {
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
func (o *CheckOptions) base() (*scenarios.Scenario, error) {
	sc, err := matrix.Base(algorithms.Custom)
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

// Explore runs the exploration and returns what it found, without failing
// anything: for reports, and for tests that document which faults break a
// lock.
func Explore(f Factory, opt CheckOptions) (*explore.Result, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	base, err := opt.base()
	if err != nil {
		return nil, err
	}
	return explore.Explore(explore.Options{
		Algorithm: algorithms.Custom,
		Factory:   f.algorithm(opt.TTL, false, false),
		Base:      base,
		Classes:   opt.Faults,
		Runs:      opt.Runs,
		Seed:      opt.Seed,
		Workers:   opt.Workers,
	})
}

// Check explores random faults under the baton scheduler (no goroutines,
// no timers in the lock) against the lock and fails t with a minimal
// counterexample if any run violates mutual exclusion, resource safety or
// liveness.
//
// Deprecated: Run gives one subtest per fault class, expectations, failfiles
// and reports, and runs locks with goroutines and timers.
func Check(t testing.TB, f Factory, opt CheckOptions) {
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
func Describe(res *explore.Result, name string) string {
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
func Replay(t testing.TB, f Factory, opt CheckOptions, file string) *runner.Result {
	t.Helper()
	if err := opt.defaults(); err != nil {
		t.Fatalf("locktest: %v", err)
	}
	sc, err := scenarios.Load(file)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	logWarnings(t, sc)
	res, err := runner.Run(sc, sc.Seed, runner.Options{Factory: f.algorithm(opt.TTL, false, false)})
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	if !res.Matches() {
		t.Errorf("locktest: %s did not reproduce: verdict %+v, expected %+v", file, res.Report.Verdict, sc.Expect)
	}
	return res
}
