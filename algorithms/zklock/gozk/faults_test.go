package gozk

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim/zk/ensemble"
)

var servers = []string{"zk1", "zk2", "zk3"}

// at sleeps until offset after the plan started (plus half a millisecond,
// so a fault never ties with a message delivery).
func at(start time.Time, offset time.Duration) {
	time.Sleep(time.Until(start.Add(offset + 500*time.Microsecond)))
}

// faultClasses are the fault plans of the table, each drawn from the
// run's seed.
var faultClasses = []struct {
	name string
	plan func(e *ensemble.Ensemble, r *rand.Rand)
}{
	{"none", nil},
	{"crash-follower", func(e *ensemble.Ensemble, r *rand.Rand) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(1500))*time.Millisecond)
		victim := servers[r.IntN(2)] // zk3 leads at first
		e.Crash(victim)
		time.Sleep(3 * time.Second)
		e.Restart(victim)
	}},
	{"crash-leader", func(e *ensemble.Ensemble, r *rand.Rand) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(1500))*time.Millisecond)
		victim := e.Leader()
		e.Crash(victim)
		time.Sleep(3 * time.Second)
		e.Restart(victim)
	}},
	{"drop", func(e *ensemble.Ensemble, r *rand.Rand) {
		start := time.Now()
		t := time.Duration(0)
		for i := 0; i < 3; i++ {
			t += time.Duration(100+r.IntN(1000)) * time.Millisecond
			at(start, t)
			e.Drop(fmt.Sprintf("c%d", 1+r.IntN(3)))
		}
	}},
	{"partition-client", func(e *ensemble.Ensemble, r *rand.Rand) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(1500))*time.Millisecond)
		c := fmt.Sprintf("c%d", 1+r.IntN(3))
		for _, s := range servers {
			e.Partition(c, s)
		}
		time.Sleep(time.Duration(500+r.IntN(7500)) * time.Millisecond)
		for _, s := range servers {
			e.Heal(c, s)
		}
	}},
	{"partition-minority", func(e *ensemble.Ensemble, r *rand.Rand) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(1500))*time.Millisecond)
		i := r.IntN(3)
		for j, s := range servers {
			if j != i {
				e.Partition(servers[i], s)
			}
		}
		time.Sleep(time.Duration(2000+r.IntN(12000)) * time.Millisecond)
		for j, s := range servers {
			if j != i {
				e.Heal(servers[i], s)
			}
		}
	}},
}

func zkLockWorkload(cfg ensemble.Config) workload {
	return workload{
		cfg: cfg, clients: 3, rounds: 3, hold: 300 * time.Millisecond,
		sessionTimeout: 4 * time.Second, horizon: 60 * time.Second,
		newLock: func(c *zk.Conn, i int, _ *rand.Rand) locker {
			return zkLock{zk.NewLock(c, "/locks/x", zk.WorldACL(zk.PermAll))}
		},
	}
}

func fixedQueueWorkload(cfg ensemble.Config, naive bool) workload {
	w := zkLockWorkload(cfg)
	w.newLock = func(c *zk.Conn, i int, r *rand.Rand) locker {
		q := NewQueue(c, "/locks/x")
		q.Naive = naive
		q.Rand = seededReader{r}
		return queueLock{q}
	}
	return w
}

// TestGoZookeeperLockNoFaults: go-zookeeper's own Lock recipe, unmodified,
// on a 3-server ensemble: every round completes, holds never overlap.
func TestGoZookeeperLockNoFaults(t *testing.T) {
	o := play(t, zkLockWorkload(ensemble.Config{}), 1)
	if o.verdict() != "ok" || o.done != 9 || o.errors != 0 {
		t.Fatalf("verdict %q, %d/%d rounds, %d errors, overlap %q", o.verdict(), o.done, o.want, o.errors, o.overlap)
	}
}

// TestDeterministicReplay: the same seed gives the same run, message for
// message, with faults and the real client's goroutines and timers.
func TestDeterministicReplay(t *testing.T) {
	for _, fc := range faultClasses[1:] {
		w := zkLockWorkload(ensemble.Config{})
		w.plan = fc.plan
		a, b := play(t, w, 42), play(t, w, 42)
		if a.digest != b.digest || fmt.Sprint(a.holds) != fmt.Sprint(b.holds) {
			t.Errorf("%s: two runs of seed 42 differ: digests %s / %s, holds %v / %v", fc.name, a.digest[:12], b.digest[:12], a.holds, b.holds)
		}
	}
}

// TestGoZookeeperLockFaultTable puts go-zookeeper's Lock under every fault
// class, 20 seeds each, and prints the table the README shows.
func TestGoZookeeperLockFaultTable(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 5
	}
	var rows []string
	for _, fc := range faultClasses {
		counts := map[string]int{}
		var example string
		for s := 0; s < seeds; s++ {
			w := zkLockWorkload(ensemble.Config{})
			w.plan = fc.plan
			o := play(t, w, uint64(s))
			v := o.verdict()
			counts[v]++
			if v != "ok" && example == "" {
				example = fmt.Sprintf("seed %d: %s; %s", s, v, o.overlap)
			}
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", fc.name, summary(counts, seeds), example))
	}
	t.Logf("go-zookeeper/zk Lock × fault class (%d seeds each):\n| fault class | runs | first violation |\n| --- | --- | --- |\n%s", seeds, strings.Join(rows, "\n"))
}

func summary(counts map[string]int, n int) string {
	var parts []string
	for _, v := range []string{"ok", "mutual exclusion violated", "liveness violated", "mutual exclusion violated, liveness violated"} {
		if counts[v] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", v, counts[v], n))
		}
	}
	return strings.Join(parts, "; ")
}
