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

// WAIT's reply is read under go-redis's own deadline for it (timeout + 10 s,
// baseClient.cmdTimeout), not the client's 50 ms read timeout: WAIT 1 200
// with a replica lagging 150 ms waits for the acknowledgement.
func TestWaitHonoursItsOwnReadDeadline(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.Replicate(b, 150*time.Millisecond)
	h := w.NewHost("c1", nil)
	c := a.NewClient(h, ClientOptions{Timeout: 50 * time.Millisecond})
	var got int64
	var err error
	var took time.Duration
	h.Spawn("c1", 0, func(p *Process) {
		ctx := p.Context()
		c.Set(ctx, "k", "v", 0)
		t0 := p.TrueNow()
		got, err = c.Wait(ctx, 1, 200*time.Millisecond).Result()
		took = p.TrueNow() - t0
	})
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if err != nil || got != 1 || took < 150*time.Millisecond || took > 200*time.Millisecond {
		t.Fatalf("WAIT 1 200 over a 150 ms replica: %d, %v after %v; want 1 once B's acknowledgement arrives, within the 200 ms", got, err, took)
	}
}

// WAIT with no replica blocks until its timeout and answers 0, as
// redis-server does; WAIT n 0 blocks for ever, bounded only by the run.
func TestWaitWithoutReplicaBlocks(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	h := w.NewHost("c1", nil)
	c := a.NewClient(h, ClientOptions{Timeout: 50 * time.Millisecond})
	var got int64
	var err error
	var took time.Duration
	forever := false
	h.Spawn("c1", 0, func(p *Process) {
		ctx := p.Context()
		c.Set(ctx, "k", "v", 0)
		t0 := p.TrueNow()
		got, err = c.Wait(ctx, 1, 300*time.Millisecond).Result()
		took = p.TrueNow() - t0
		c.Wait(ctx, 1, 0)
		forever = true // never reached: the run ends first
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if err != nil || got != 0 || took < 300*time.Millisecond || took > 310*time.Millisecond {
		t.Fatalf("WAIT 1 300 without replicas: %d, %v after %v; want 0 after 300 ms", got, err, took)
	}
	if forever {
		t.Fatal("WAIT 1 0 without replicas returned; want it to block until the run ends")
	}
}

// go-redis's failover client closes its idle connections to the old master
// at +switch-master (sentinel.go onFailover, ConnPool.Filter): the next
// command goes to the new master without an error.
func TestFailoverClientMovesIdleConnectionAtTheSwitch(t *testing.T) {
	w := New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.Replicate(b, 10*time.Millisecond)
	var before, after string
	var err error
	runClient(t, w, a, func(p *Process, c *redis.Client) {
		ctx := p.Context()
		c.Set(ctx, "k", "v", 0)
		before = c.Get(ctx, "k").Val()
		p.Sleep(time.Second)
		if err := b.Promote(); err != nil {
			t.Errorf("promote: %v", err)
		}
		b.Miniredis().Set("k", "on-B") // tells the two masters apart
		after, err = c.Get(ctx, "k").Result()
	})
	if before != "v" || err != nil || after != "on-B" {
		t.Fatalf("before the switch %q; first read after it: %q, %v; want on-B from the new master", before, after, err)
	}
}
