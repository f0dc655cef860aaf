package scenarios

import (
	"fmt"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/etcdlock" // registers the etcd-* algorithms
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
	b := BackendInfo{Name: etcdlock.Backend, Hosts: etcdHostNames, Crashable: true}
	b.Params = []algorithms.Param{
		{Name: "etcd_members", Expect: "1, 3 or 5", Check: algorithms.OneOf("1", "3", "5")},
	}
	b.Metrics = []string{"db_segments"}
	RegisterBackend(b)
}

// EtcdMembers is the cluster's size from params.etcd_members.
func EtcdMembers(sc *Scenario) int {
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
	for i := 1; i <= EtcdMembers(sc); i++ {
		out = append(out, fmt.Sprintf("etcd%d", i))
	}
	return out
}
