package scenarios

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/etcdlock" // registers the etcd-* algorithms
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/etcdnode"
)

// The etcd backend: the real clientv3 and its concurrency package
// (unmodified) against a simulated etcd cluster of 1, 3 or 5 members
// (sim/etcdnode: the real raft library, an MVCC key space, leases timed by
// the leader) in the bubble runtime. The members are world hosts
// etcd1…etcdN, so fault schedules name them: node-crash: etcd1 crashes a
// member (it restarts with its raft log), a partition [[c1], [etcd1,
// etcd2, etcd3]] cuts a client off, a pause of etcd1 stops the leader's
// process, drop and delay act on client connections as TCP does. Clients
// dial every member (clientv3's endpoints), in turns per RPC method.
// etcd1 leads first.
//
// Params:
//
//	etcd_members: 3        1, 3 or 5 members
func init() {
	b := BackendInfo{Name: etcdlock.Backend, Hosts: etcdHostNames, Build: newEtcdBackend, Crashable: true}
	b.Params = []algorithms.Param{
		{Name: "etcd_members", Expect: "1, 3 or 5", Check: algorithms.OneOf("1", "3", "5")},
	}
	b.Metrics = []string{"db_segments"}
	RegisterBackend(b)
}

func etcdMembers(sc *Scenario) int {
	switch sc.Params["etcd_members"] {
	case "1":
		return 1
	case "5":
		return 5
	}
	return 3
}

func etcdHostNames(sc *Scenario) []string {
	var out []string
	for i := 1; i <= etcdMembers(sc); i++ {
		out = append(out, fmt.Sprintf("etcd%d", i))
	}
	return out
}

type etcdBackend struct {
	c *etcdnode.Cluster
}

func newEtcdBackend(w *sim.World, sc *Scenario) (Backend, error) {
	if !w.Bubble() {
		return nil, fmt.Errorf("backend %s runs the real clientv3 and needs the bubble runtime (Options.Bubble)", etcdlock.Backend)
	}
	return &etcdBackend{c: etcdnode.NewOnWorld(w, etcdnode.Config{Members: etcdMembers(sc)})}, nil
}

// Connect hands client host h a way to make clientv3 clients of the
// cluster from its host.
func (b *etcdBackend) Connect(h *sim.Host) any {
	return &etcdlock.Client{New: func() (*clientv3.Client, error) { return b.c.NewClient(h, clientv3.Config{}) }}
}

func (b *etcdBackend) Hosts() []*sim.Host {
	var out []*sim.Host
	for _, m := range b.c.Members() {
		out = append(out, m.Host)
	}
	return out
}

// Servers are the members, for node-crash: a crashed member restarts
// with its raft log.
func (b *etcdBackend) Servers() map[string]faults.Server {
	out := map[string]faults.Server{}
	for _, m := range b.c.Members() {
		out[m.Name] = etcdMember{b.c, m.Name}
	}
	return out
}

type etcdMember struct {
	c    *etcdnode.Cluster
	name string
}

func (m etcdMember) Crash()   { m.c.Crash(m.name) }
func (m etcdMember) Restart() { m.c.Restart(m.name, true) }

func (b *etcdBackend) Metrics() []Metric {
	return []Metric{{Name: "db_segments", Value: int64(b.c.Segments())}}
}
