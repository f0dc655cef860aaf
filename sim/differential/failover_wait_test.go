package differential

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/internal/realredis"
	"github.com/redis/go-redis/v9"
)

// WAIT on a master without replicas blocks until its timeout and answers
// 0, on redis-server as in the simulation, and go-redis reads that reply
// under WAIT's own deadline (timeout + 10 s), not the client's 50 ms read
// timeout.
func TestDifferentialWaitWithoutReplica(t *testing.T) {
	t.Parallel()
	srv := realredis.Start(t, realredis.Options{})
	real := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1, ReadTimeout: 50 * time.Millisecond})
	defer real.Close()
	ctx := context.Background()
	if err := real.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	realGot, realErr := real.Wait(ctx, 1, 300*time.Millisecond).Result()
	realTook := time.Since(start)

	w := sim.New(1)
	a := w.NewRedisNode("A", nil)
	h := w.NewHost("c1", nil)
	c := a.NewClient(h, sim.ClientOptions{Timeout: 50 * time.Millisecond})
	var simGot int64
	var simErr error
	var simTook time.Duration
	h.Spawn("c1", 0, func(p *sim.Process) {
		c.Set(p.Context(), "k", "v", 0)
		t0 := p.TrueNow()
		simGot, simErr = c.Wait(p.Context(), 1, 300*time.Millisecond).Result()
		simTook = p.TrueNow() - t0
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	// Only a lower bound on the real side: load can delay a reply, never
	// hasten it.
	if realErr != nil || realGot != 0 || realTook < 300*time.Millisecond {
		t.Fatalf("redis-server WAIT 1 300 without replicas: %d, %v after %v; want 0 after >= 300ms", realGot, realErr, realTook)
	}
	if simErr != nil || simGot != realGot || simTook < 300*time.Millisecond {
		t.Fatalf("simulated WAIT 1 300 without replicas: %d, %v after %v; redis-server said %d", simGot, simErr, simTook, realGot)
	}
}

// min-replicas-to-write 1, min-replicas-max-lag 10: a master whose only
// replica stops answering (SIGSTOP: the connection stays open, the ACKs
// stop, as across a partition) keeps accepting writes for about the max lag
// and then refuses them with NOREPLICAS. The simulation, whose replica is
// promoted away across a partition, refuses after the same whole-second
// lag. Phases follow observable events (replica online, first refusal); the
// real refusal time is checked against a lower bound (9 s: the lag is
// counted in whole seconds of server.unixtime) and a bound 10x above the
// expected 11 s.
func TestDifferentialMinReplicasRefusalAfterMaxLag(t *testing.T) {
	t.Parallel()
	opts := realredis.Options{Extra: []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "10"}}
	master := realredis.Start(t, opts)
	replica := realredis.Start(t, realredis.Options{})
	ctx := context.Background()
	mc, rc := master.Client(), replica.Client()
	defer mc.Close()
	defer rc.Close()
	if err := rc.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(master.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 120*time.Second, func() bool {
		info := mc.Info(ctx, "replication").Val()
		return strings.Contains(info, "state=online") && mc.Set(ctx, "probe", "1", 0).Err() == nil
	})
	if err := replica.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer replica.Signal(syscall.SIGCONT)
	stopped := time.Now()
	if err := mc.Set(ctx, "k", "right-after-stop", 0).Err(); err != nil {
		t.Fatalf("write right after the replica stopped: %v, want OK (within max-lag)", err)
	}
	var refusal error
	waitFor(t, 120*time.Second, func() bool {
		refusal = mc.Set(ctx, "k", "x", 0).Err()
		return refusal != nil
	})
	realAfter := time.Since(stopped)
	if refusal.Error() != "NOREPLICAS Not enough good replicas to write." || realAfter < 9*time.Second {
		t.Fatalf("redis-server: first refusal %v after %v; want NOREPLICAS after >= 9s", refusal, realAfter)
	}

	w := sim.New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.MinReplicasToWrite, a.MinReplicasMaxLag = 1, 10*time.Second
	a.Replicate(b, 100*time.Millisecond)
	h := w.NewHost("c1", nil)
	c := a.NewClient(h, sim.ClientOptions{Timeout: 5 * time.Second})
	var simFirst, simRefusal error
	var simAfter time.Duration
	h.Spawn("c1", 0, func(p *sim.Process) {
		p.Sleep(2 * time.Second)
		for _, pair := range [][2]string{{"A", "B"}, {"B", "A"}, {"c1", "B"}, {"B", "c1"}} {
			w.Net.Cut(pair[0], pair[1])
		}
		if err := b.Promote(); err != nil {
			t.Errorf("promote: %v", err)
		}
		t0 := p.TrueNow()
		simFirst = c.Set(p.Context(), "k", "right-after", 0).Err()
		for simRefusal == nil && p.TrueNow()-t0 < time.Minute {
			p.Sleep(100 * time.Millisecond)
			simRefusal = c.Set(p.Context(), "k", "x", 0).Err()
		}
		simAfter = p.TrueNow() - t0
	})
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	if simFirst != nil || simRefusal == nil || simRefusal.Error() != refusal.Error() || simAfter < 9*time.Second || simAfter > 12*time.Second {
		t.Fatalf("simulation: write right after the promotion %v; first refusal %v after %v; redis-server refused with %v after %v", simFirst, simRefusal, simAfter, refusal, realAfter)
	}
}

// waitFor polls cond every 50 ms until it holds, failing the test after
// limit (a bound far above the expected time, only against a hang).
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached within %v", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WAIT 1 2000 on a master whose replica lags (stopped for 300 ms, then
// resumed) answers 1 once the replica acknowledges, on redis-server as in
// the simulation (a 300 ms replication lag), with a client whose ordinary
// read timeout is 50 ms: go-redis reads WAIT's reply under WAIT's own
// deadline, and so does the simulated connection.
func TestDifferentialWaitLaggingReplica(t *testing.T) {
	t.Parallel()
	master := realredis.Start(t, realredis.Options{})
	replica := realredis.Start(t, realredis.Options{})
	ctx := context.Background()
	rc := replica.Client()
	defer rc.Close()
	if err := rc.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(master.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	real := redis.NewClient(&redis.Options{Addr: master.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1, ReadTimeout: 50 * time.Millisecond})
	defer real.Close()
	waitFor(t, 2*time.Minute, func() bool {
		return strings.Contains(real.Info(ctx, "replication").Val(), "state=online")
	})
	if err := replica.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer replica.Signal(syscall.SIGCONT)
	if err := real.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		replica.Signal(syscall.SIGCONT)
	}()
	start := time.Now()
	realGot, realErr := real.Wait(ctx, 1, 2*time.Second).Result()
	realTook := time.Since(start)
	// Only lower bounds: load can delay the acknowledgement, never hasten it.
	if realErr != nil || realGot != 1 || realTook < 300*time.Millisecond {
		t.Fatalf("redis-server WAIT 1 2000 over a replica stopped for 300 ms: %d, %v after %v; want 1 after >= 300ms", realGot, realErr, realTook)
	}

	w := sim.New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.Replicate(b, 300*time.Millisecond)
	h := w.NewHost("c1", nil)
	c := a.NewClient(h, sim.ClientOptions{Timeout: 50 * time.Millisecond})
	var simGot int64
	var simErr error
	var simTook time.Duration
	h.Spawn("c1", 0, func(p *sim.Process) {
		p.Sleep(time.Second) // the link is up
		c.Set(p.Context(), "k", "v", 0)
		t0 := p.TrueNow()
		simGot, simErr = c.Wait(p.Context(), 1, 2*time.Second).Result()
		simTook = p.TrueNow() - t0
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	if simErr != nil || simGot != realGot || simTook < 300*time.Millisecond || simTook >= 2*time.Second {
		t.Fatalf("simulated WAIT 1 2000 over a 300 ms replica: %d, %v after %v; redis-server said %d after %v", simGot, simErr, simTook, realGot, realTook)
	}
}
