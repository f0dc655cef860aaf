package algorithms_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/algorithms"
	_ "github.com/locklab/locklab/algorithms/etcdlock"
	_ "github.com/locklab/locklab/algorithms/fslock"
	_ "github.com/locklab/locklab/algorithms/zklock/gozk"
)

// The gozk, etcd and file-system locks say how they fence (Info.Fencing,
// issue 33): a lock that numbers its own leases (a sequential znode, a
// create revision, a counter file) is built in, one that hands out no
// token and has no Redis node to INCR on is none; Build refuses
// token_source: incr on either, naming the algorithm, before building anything.
func TestBuildFencingFollowsInfoBackends(t *testing.T) {
	want := map[string]string{
		"gozk-queue": algorithms.FencingBuiltIn, "gozk-queue-naive": algorithms.FencingBuiltIn,
		"gozk-reentrant": algorithms.FencingBuiltIn, "gozk-semaphore": algorithms.FencingBuiltIn,
		"gozk-rwlock": algorithms.FencingBuiltIn, "gozk-rwlock-naive": algorithms.FencingBuiltIn,
		"gozk-lock": algorithms.FencingNone, "gozk-simple": algorithms.FencingNone,
		"etcd-mutex-fenced": algorithms.FencingBuiltIn,
		"etcd-mutex":        algorithms.FencingNone, "etcd-election": algorithms.FencingNone,
		"lockfile-pid": algorithms.FencingBuiltIn, "lockfile-excl": algorithms.FencingBuiltIn,
		"flock": algorithms.FencingBuiltIn, "fcntl": algorithms.FencingBuiltIn,
	}
	p := algorithms.Params{Key: "k", Extra: map[string]string{algorithms.ParamTokenSource: "incr"}}
	for name, fencing := range want {
		info, err := algorithms.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if info.Fencing != fencing {
			t.Errorf("%s: Info.Fencing = %q, want %q", name, info.Fencing, fencing)
		}
		wantErr := name + "'s fencing is built in; expected token_source: none"
		if fencing == algorithms.FencingNone {
			wantErr = "cannot be added to " + name + ", whose leases carry no fencing token (its fencing is none); expected token_source: none"
		}
		if _, err := algorithms.Build(name, p, algorithms.Conns{}); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s with token_source: incr: %v, want a refusal containing %q", name, err, wantErr)
		}
	}
}
