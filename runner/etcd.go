package runner

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/algorithms/etcdlock" // registers the etcd-* algorithms
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/etcdnode"
)

// The etcd backend's run half: the cluster built in the world; its
// params and hosts are scenarios/etcd.go's.
func init() {
	RegisterBackend(BackendInfo{Name: etcdlock.Backend, Build: newEtcdBackend})
}

type etcdBackend struct {
	c *etcdnode.Cluster
}

func newEtcdBackend(w *sim.World, sc *scenarios.Scenario) (Backend, error) {
	if !w.Bubble() {
		return nil, fmt.Errorf("backend %s runs the real clientv3 and needs the bubble runtime (Options.Bubble)", etcdlock.Backend)
	}
	return &etcdBackend{c: etcdnode.NewOnWorld(w, etcdnode.Config{Members: scenarios.EtcdMembers(sc)})}, nil
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
