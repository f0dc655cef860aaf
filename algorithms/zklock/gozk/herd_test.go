package gozk

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim/zk/ensemble"
)

// herdWorkload: n clients on a 3-server ensemble each take the lock once
// and hold it 10 ms.
func herdWorkload(n int, simple bool) workload {
	return workload{
		cfg: ensemble.Config{}, clients: n, rounds: 1, hold: 10 * time.Millisecond,
		sessionTimeout: 10 * time.Second, horizon: 5 * time.Second,
		newLock: func(c *zk.Conn, i int, _ *rand.Rand) locker {
			if simple {
				return NewSimple(c, "/locks/simple")
			}
			return zkLock{zk.NewLock(c, "/locks/x", zk.WorldACL(zk.PermAll))}
		},
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestHerdEffect: 100 waiters behind a holder, with the real client. The
// simple lock's every release wakes every waiter; go-zookeeper's queue
// Lock wakes one. Both are safe and finish.
func TestHerdEffect(t *testing.T) {
	// Wall time is logged, never asserted; BENCHMARKS.md's figures come
	// from BenchmarkHerdRealClient, which runs these two herds in a child
	// process (a Benchmark cannot host a synctest bubble). CPU time
	// (user+system) is logged beside wall time: on a shared machine it
	// says more.
	t0, c0 := time.Now(), cpuTime()
	simple := play(t, herdWorkload(101, true), 1)
	t1, c1 := time.Now(), cpuTime()
	queue := play(t, herdWorkload(101, false), 1)
	t2, c2 := time.Now(), cpuTime()
	t.Logf("101 clients: simple lock %d notifications, %d messages, wall %v, cpu %v; go-zookeeper Lock (queue) %d notifications, %d messages, wall %v, cpu %v",
		simple.notifs, simple.messages, t1.Sub(t0), c1-c0, queue.notifs, queue.messages, t2.Sub(t1), c2-c1)
	if simple.verdict() != "ok" || queue.verdict() != "ok" || simple.done != 101 || queue.done != 101 {
		t.Fatalf("simple %s (%d done), queue %s (%d done)", simple.verdict(), simple.done, queue.verdict(), queue.done)
	}
	if queue.notifs > 101 {
		t.Errorf("queue: %d notifications; each release should wake one waiter", queue.notifs)
	}
	if simple.notifs < 2000 {
		t.Errorf("simple: %d notifications; every release should wake every waiter (about n²/2)", simple.notifs)
	}
}
