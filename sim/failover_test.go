package sim

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Sentinel promotion does not reach across a partition: the old master,
// cut off from the promoted replica, never sees the replication link close,
// so with min-replicas-to-write 1 and min-replicas-max-lag 10 it goes on
// accepting writes until the replica's last REPLCONF ACK is more than 10
// whole seconds old (redis-server: replication.c refreshGoodSlavesCount
// counts replicas with server.unixtime - repl_ack_time <= max-lag). That
// window is the split brain min-replicas only bounds, never closes.
func TestPromoteAcrossPartitionKeepsOldMasterWritableWithinMaxLag(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.MinReplicasToWrite, a.MinReplicasMaxLag = 1, 10*time.Second
	a.Replicate(b, 100*time.Millisecond)
	var at6s, at13s error
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		ctx := p.Context()
		p.Sleep(2 * time.Second) // B has acknowledged at least once
		w.Net.Cut("A", "B")
		w.Net.Cut("B", "A")
		w.Net.Cut("c1", "B") // the client is on the old master's side
		w.Net.Cut("B", "c1")
		if err := b.Promote(); err != nil {
			t.Errorf("promote: %v", err)
		}
		p.Sleep(6 * time.Second)
		at6s = c.Set(ctx, "k", "old-side", 0).Err()
		p.Sleep(7 * time.Second)
		at13s = c.Set(ctx, "k", "old-side-2", 0).Err()
	})
	if at6s != nil {
		t.Fatalf("write to the cut-off old master 6 s after the promotion: %v, want OK (its replica's last ACK is within max-lag)", at6s)
	}
	if at13s == nil || at13s.Error() != "NOREPLICAS Not enough good replicas to write." {
		t.Fatalf("write 13 s after the promotion: %v, want NOREPLICAS", at13s)
	}
}

// A promotion the old master can see (no partition) closes the link at
// once: the old master then has no replica and refuses writes immediately.
func TestPromoteReachableOldMasterRefusesAtOnce(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.MinReplicasToWrite, a.MinReplicasMaxLag = 1, 10*time.Second
	a.Replicate(b, 100*time.Millisecond)
	var err error
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		p.Sleep(2 * time.Second)
		// Sentinel's REPLICAOF NO ONE makes B close its link to A.
		b.detach()
		err = c.Set(p.Context(), "k", "v", 0).Err()
	})
	if err == nil || err.Error() != "NOREPLICAS Not enough good replicas to write." {
		t.Fatalf("write after the replica closed its link: %v, want NOREPLICAS", err)
	}
}
