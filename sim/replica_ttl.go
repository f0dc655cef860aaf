package sim

import "slices"

// A Redis replica keeps each key's expiry in its keyspace and reports it
// (PTTL, TTL, a script reading one) as the master would; it only never acts
// on it (expireIfNeeded returns "expired" without deleting on a replica).
// This node's replicas keep expiries in the shadow instead, with no TTL in
// miniredis, so that miniredis never deletes a key on its own; found by
// TestDifferentialReplication: a real replica answered PTTL 99997 where the
// simulated one answered -1.
//
// withReplicaTTLs runs a command on a replica with the shadow's expiries
// lent to miniredis as TTLs, and takes them back afterwards. Only expiries
// still in the future are lent (expired keys are hidden from reads by
// execReplica), so miniredis has nothing to delete while they are set.
func (n *RedisNode) withReplicaTTLs(run func() []byte) []byte {
	local := n.Clock.Local(n.w.now)
	var lent []string
	for k, s := range n.shadow {
		if s.expireAt > local && n.mr.Exists(k) {
			lent = append(lent, k)
		}
	}
	slices.Sort(lent) // the order of SetTTL calls must not depend on the map
	for _, k := range lent {
		n.mr.SetTTL(k, n.shadow[k].expireAt-local)
	}
	reply := run()
	for _, k := range lent {
		if n.mr.Exists(k) {
			n.dispatchEffect([]string{"PERSIST", k})
		}
	}
	return reply
}
