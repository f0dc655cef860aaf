package locktest

// etcd locks: a lock built on go.etcd.io/etcd/client/v3 — concurrency.Mutex,
// an Election, a lease and a Txn of your own — under the same fault
// classes, expectations, failfiles and reports as a Redis lock. The
// user's constructor receives an unmodified *clientv3.Client of the
// simulated etcd cluster of sim/etcdnode (three members by default, the
// real raft library), dialling over the simulated network from the
// client's host, inside the run's bubble:
//
//	locktest.RunEtcd(t, func(cli *clientv3.Client) locktest.Lock { ... }, opt)
//
// Each client gets its own clientv3 client (a service's workers each
// holding a session is the common shape); Options.Database.Params takes
// the backend's params (etcd_members: 1, 3 or 5). The node-crash faults of
// the crash and restart classes stop members, which restart with their
// raft log.

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/etcdlock"
)

// EtcdFactory builds one client's lock on its clientv3 client. It is
// called once per client per run, inside the run, when the client first
// locks.
type EtcdFactory func(cli *clientv3.Client) Lock

// customEtcd is the hidden algorithm a user's etcd lock's runs name.
const customEtcd = "custom-etcd"

func init() {
	algorithms.Register(algorithms.Info{
		Name:    customEtcd,
		Summary: "your own lock on the etcd backend, supplied by a factory in Go (scenarios/locktest)",
		Backend: etcdlock.Backend, Bubble: true, Hidden: true,
		New: func(algorithms.Params, algorithms.Conns) (algorithms.Lock, error) {
			return nil, errors.New("a custom etcd lock is built by a factory in Go; use package scenarios/locktest")
		},
	})
}

// RunEtcd tests a lock built on a *clientv3.Client as Run tests a Redis
// lock: one subtest per fault class, each class judged against
// opt.Expect, counterexamples shrunk, saved as failfiles and replayed.
func RunEtcd(t *testing.T, f EtcdFactory, opt Options) {
	t.Helper()
	if f == nil {
		t.Fatal("locktest: RunEtcd: the factory is nil")
	}
	runDatabase(t, customEtcd, dbBuilder{open: func(c any, _ Database) (any, func(), error) {
		client, ok := c.(*etcdlock.Client)
		if !ok {
			return nil, nil, fmt.Errorf("locktest: RunEtcd: expected an etcd client, got %T", c)
		}
		cli, err := client.New()
		if err != nil {
			return nil, nil, err
		}
		// The cluster closes the client when the run ends; a crash of
		// the client host leaves it to that too.
		return cli, func() {}, nil
	}, build: func(h any) Lock { return f(h.(*clientv3.Client)) }}, opt)
}

// etcdParams are the params a run of an etcd lock starts from: the
// backend's own (Options.Database.Params), none of the database ones.
func etcdParams(o *Options) map[string]string {
	p := map[string]string{}
	maps.Copy(p, o.Database.Params)
	return p
}
