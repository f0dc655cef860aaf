package differential

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/internal/realredis"
	"github.com/redis/go-redis/v9"
)

// switchOutcome is what two go-redis failover clients see across a
// Sentinel failover of a master that stopped answering: one whose only
// connection sat idle in its pool, one whose command was waiting on the old
// master when the switch came.
type switchOutcome struct {
	before       error  // the idle client's write before the failover
	busy         error  // the waiting client's command, ended by the switch
	after        error  // the idle client's first write after the switch
	newMasterGot string // the new master's value of the key written after
}

func (o switchOutcome) String() string {
	return "write before: " + errText(o.before) + "; command waiting at the switch: " + errText(o.busy) +
		"; idle client's next write: " + errText(o.after) + "; new master holds " + strconv.Quote(o.newMasterGot)
}

func errText(err error) string {
	if err == nil {
		return "OK"
	}
	return err.Error()
}

// isTimeout reports whether err is a read deadline passing, not the
// connection being closed under the command.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// go-redis's failover client, told +switch-master by Sentinel, closes its
// connections to the old master (sentinel.go onFailover, ConnPool.Filter):
// an idle one leaves the pool, so the next command dials the new master and
// succeeds without an error; one in use is closed under its command, which
// fails at once instead of waiting out its read timeout. Proved against
// redis-server 7 with a replica and three real Sentinels (redis-server
// --sentinel), the old master SIGSTOPped so that they vote a failover, and
// compared with the simulation's RedisNode.Promote (the old master down, the
// clients able to reach the new one). Phases follow what the servers say
// (Sentinel naming the new master, the clients' pools), never a sleep.
func TestDifferentialFailoverClientSwitch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := realredis.Start(t, realredis.Options{})
	replica := realredis.Start(t, realredis.Options{})
	rc := replica.Client()
	defer rc.Close()
	if err := rc.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(master.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	mc := master.Client()
	defer mc.Close()
	waitFor(t, 2*time.Minute, func() bool {
		return strings.Contains(mc.Info(ctx, "replication").Val(), "state=online")
	})
	sentinels := realredis.StartSentinels(t, master, 3, realredis.SentinelOptions{})

	idleOpts := realredis.FailoverOptions("mymaster", sentinels)
	idleOpts.ReadTimeout = 5 * time.Second // a command sent to the stopped master fails after this
	idle := redis.NewFailoverClient(idleOpts)
	defer idle.Close()
	busyOpts := realredis.FailoverOptions("mymaster", sentinels)
	busyOpts.ReadTimeout = 2 * time.Minute // only the switch can end its wait early
	busy := redis.NewFailoverClient(busyOpts)
	defer busy.Close()

	var real switchOutcome
	real.before = idle.Set(ctx, "k", "before", 0).Err()
	if err := busy.Ping(ctx).Err(); err != nil {
		t.Fatalf("failover client PING before the failover: %v", err)
	}
	if err := master.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer master.Signal(syscall.SIGCONT)
	busyDone := make(chan error, 1)
	go func() { busyDone <- busy.Set(ctx, "k", "busy", 0).Err() }()

	sc := sentinels[0].SentinelClient()
	defer sc.Close()
	waitFor(t, 2*time.Minute, func() bool {
		addr, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		return err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(replica.Port)
	})
	select {
	case real.busy = <-busyDone:
	case <-time.After(time.Minute):
		t.Fatal("redis-server: the command waiting on the stopped old master did not end within a minute of the switch")
	}
	// The failover client hears +switch-master on its own subscription,
	// shortly after Sentinel names the new master; wait until it has acted
	// on it (its pool no longer holds the old master's connection).
	deadline := time.Now().Add(time.Minute)
	for idle.PoolStats().TotalConns != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("go-redis's failover client still holds %d connection(s) a minute after Sentinel named the new master", idle.PoolStats().TotalConns)
		}
		time.Sleep(20 * time.Millisecond)
	}
	real.after = idle.Set(ctx, "k", "after-switch", 0).Err()
	real.newMasterGot = rc.Get(ctx, "k").Val()
	if role := rc.Info(ctx, "replication").Val(); !strings.Contains(role, "role:master") {
		t.Fatalf("redis-server: the replica is not master after the failover: %s", role)
	}

	// The same in the simulation: B replicates A; A goes down and B is
	// promoted, both clients reaching B.
	w := sim.New(1)
	a := w.NewRedisNode("A", nil)
	b := w.NewRedisNode("B", nil)
	a.Replicate(b, 10*time.Millisecond)
	h1, h2 := w.NewHost("c1", nil), w.NewHost("c2", nil)
	c1 := a.NewClient(h1, sim.ClientOptions{Timeout: idleOpts.ReadTimeout})
	c2 := a.NewClient(h2, sim.ClientOptions{Timeout: busyOpts.ReadTimeout})
	var simOut switchOutcome
	h1.Spawn("c1", 0, func(p *sim.Process) {
		simOut.before = c1.Set(p.Context(), "k", "before", 0).Err()
		p.Sleep(5 * time.Second) // past the failover
		simOut.after = c1.Set(p.Context(), "k", "after-switch", 0).Err()
	})
	h2.Spawn("c2", 0, func(p *sim.Process) {
		c2.Ping(p.Context())
		p.Sleep(time.Second)
		w.Net.SetDown("A", true) // stopped: what is sent to it is never answered
		w.After(2*time.Second, func() {
			if err := b.Promote(); err != nil {
				t.Errorf("promote: %v", err)
			}
		})
		simOut.busy = c2.Set(p.Context(), "k", "busy", 0).Err()
	})
	if err := w.Run(time.Hour); err != nil {
		t.Fatal(err)
	}
	simOut.newMasterGot, _ = b.Miniredis().Get("k")

	ok := func(o switchOutcome) bool {
		return o.before == nil && o.busy != nil && !isTimeout(o.busy) && o.after == nil && o.newMasterGot == "after-switch"
	}
	if !ok(real) {
		t.Fatalf("redis-server with Sentinel: %v; want the waiting command closed (not timed out) and the idle client's next write on the new master", real)
	}
	if !ok(simOut) {
		t.Fatalf("simulation: %v; redis-server with Sentinel: %v", simOut, real)
	}
}
