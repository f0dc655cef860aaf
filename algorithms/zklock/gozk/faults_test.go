package gozk

import (
	"fmt"
	"math/rand/v2"
	"runtime"
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
	plan func(e *ensemble.Ensemble, r *rand.Rand, app *appControl)
}{
	{"none", nil},
	{"crash-follower", func(e *ensemble.Ensemble, r *rand.Rand, _ *appControl) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(14000))*time.Millisecond)
		victim := servers[r.IntN(2)] // zk3 leads at first
		e.Crash(victim)
		time.Sleep(3 * time.Second)
		e.Restart(victim)
	}},
	{"crash-leader", func(e *ensemble.Ensemble, r *rand.Rand, _ *appControl) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(14000))*time.Millisecond)
		victim := e.Leader()
		e.Crash(victim)
		time.Sleep(3 * time.Second)
		e.Restart(victim)
	}},
	{"drop", func(e *ensemble.Ensemble, r *rand.Rand, _ *appControl) {
		start := time.Now()
		t := time.Duration(0)
		for i := 0; i < 3; i++ {
			t += time.Duration(100+r.IntN(5000)) * time.Millisecond
			at(start, t)
			e.Drop(fmt.Sprintf("c%d", 1+r.IntN(3)))
		}
	}},
	{"delay", func(e *ensemble.Ensemble, r *rand.Rand, _ *appControl) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(14000))*time.Millisecond)
		c := fmt.Sprintf("c%d", 1+r.IntN(3))
		e.Delay(c, time.Duration(100+r.IntN(4900))*time.Millisecond)
		time.Sleep(time.Duration(2000+r.IntN(4000)) * time.Millisecond)
		e.Delay(c, 0)
	}},
	{"pause", func(e *ensemble.Ensemble, r *rand.Rand, app *appControl) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(14000))*time.Millisecond)
		i := r.IntN(3)
		c := fmt.Sprintf("c%d", i+1)
		app.set(i, true)
		e.Pause(c)
		time.Sleep(time.Duration(500+r.IntN(7500)) * time.Millisecond)
		e.Resume(c)
		app.set(i, false)
	}},
	{"partition-client", func(e *ensemble.Ensemble, r *rand.Rand, _ *appControl) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(14000))*time.Millisecond)
		c := fmt.Sprintf("c%d", 1+r.IntN(3))
		for _, s := range servers {
			e.Partition(c, s)
		}
		time.Sleep(time.Duration(500+r.IntN(7500)) * time.Millisecond)
		for _, s := range servers {
			e.Heal(c, s)
		}
	}},
	{"partition-minority", func(e *ensemble.Ensemble, r *rand.Rand, _ *appControl) {
		start := time.Now()
		at(start, time.Duration(200+r.IntN(14000))*time.Millisecond)
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
// message, with faults and the real client's goroutines and timers, at
// GOMAXPROCS 1 and 4.
func TestDeterministicReplay(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, fc := range faultClasses[1:] {
		w := zkLockWorkload(ensemble.Config{})
		w.plan = fc.plan
		runtime.GOMAXPROCS(1)
		a := play(t, w, 42)
		runtime.GOMAXPROCS(4)
		b := play(t, w, 42)
		if a.digest != b.digest || fmt.Sprint(a.holds) != fmt.Sprint(b.holds) {
			t.Errorf("%s: two runs of seed 42 differ: digests %s / %s, holds %v / %v", fc.name, a.digest[:12], b.digest[:12], a.holds, b.holds)
		}
	}
}

// The locks of the table: go-zookeeper's own recipe, unmodified, and
// this package's queue lock naive and fixed, the last also with a holder
// that stops acting when its connection drops (Curator's SUSPENDED).
var tableLocks = []struct {
	name string
	make func() workload
}{
	{"go-zookeeper Lock", func() workload { return longHold(zkLockWorkload(ensemble.Config{})) }},
	{"queue, naive", func() workload { return longHold(fixedQueueWorkload(ensemble.Config{}, true)) }},
	{"queue, fixed", func() workload { return longHold(fixedQueueWorkload(ensemble.Config{}, false)) }},
	{"queue, fixed, stops on SUSPENDED", func() workload {
		w := longHold(fixedQueueWorkload(ensemble.Config{}, false))
		w.stopOnLoss = true
		return w
	}},
}

// longHold makes the critical section longer than the session timeout
// (6 s against 4 s), as a batch job holding a lock is.
func longHold(w workload) workload {
	w.rounds, w.hold, w.horizon = 2, 6*time.Second, 120*time.Second
	return w
}

// TestGoZookeeperLockFaultTable puts every lock of the table under every
// fault class, 20 seeds each, checks what must hold, and prints the table
// the README shows (go test -run FaultTable -v).
func TestGoZookeeperLockFaultTable(t *testing.T) {
	seeds := 20
	header := "| fault class |"
	sep := "| --- |"
	for _, l := range tableLocks {
		header += " " + l.name + " |"
		sep += " --- |"
	}
	rows := []string{header, sep}
	// got[class][lock] = verdict counts
	got := map[string]map[string]map[string]int{}
	for _, fc := range faultClasses {
		row := "| " + fc.name + " |"
		got[fc.name] = map[string]map[string]int{}
		for _, l := range tableLocks {
			counts := map[string]int{}
			got[fc.name][l.name] = counts
			for s := 0; s < seeds; s++ {
				w := l.make()
				w.plan = fc.plan
				o := play(t, w, uint64(s))
				counts[o.verdict()]++
				if o.verdict() != "ok" && testing.Verbose() && counts[o.verdict()] == 1 {
					t.Logf("%s / %s / seed %d: %s %s (%d/%d rounds)", fc.name, l.name, s, o.verdict(), o.overlap, o.done, o.want)
				}
			}
			row += " " + summary(counts, seeds) + " |"
		}
		rows = append(rows, row)
	}
	t.Logf("lock × fault class, %d seeds each:\n%s", seeds, strings.Join(rows, "\n"))

	// What must hold (runs are deterministic, so these are facts about the
	// recipes, not luck):
	for _, fc := range []string{"none", "crash-follower", "crash-leader", "drop"} {
		for _, l := range tableLocks {
			if got[fc][l.name]["ok"] != seeds {
				t.Errorf("%s / %s: %v; a fault the session outlives must not break the lock", fc, l.name, got[fc][l.name])
			}
		}
	}
	for _, fc := range faultClasses {
		fixed := got[fc.name]["queue, fixed"]
		if fixed["liveness violated"]+fixed["mutual exclusion violated, liveness violated"] > 0 {
			t.Errorf("%s / queue, fixed: %v; the fixed recipe must never leave the lock blocked", fc.name, fixed)
		}
	}
	for _, fc := range []string{"partition-client", "partition-minority"} {
		zl := got[fc]["go-zookeeper Lock"]
		if zl["liveness violated"]+zl["mutual exclusion violated, liveness violated"] == 0 {
			t.Errorf("%s / go-zookeeper Lock: %v; want the orphan node (Lock fails after its create) to block the lock", fc, zl)
		}
	}
	if got["partition-client"]["queue, fixed, stops on SUSPENDED"]["ok"] != seeds {
		t.Errorf("partition-client / stops on SUSPENDED: %v; a holder that stops when its connection drops is safe from its own partition", got["partition-client"]["queue, fixed, stops on SUSPENDED"])
	}
	if got["pause"]["queue, fixed, stops on SUSPENDED"]["mutual exclusion violated"] == 0 {
		t.Errorf("pause / stops on SUSPENDED: %v; a paused holder cannot notice anything, so stopping on SUSPENDED cannot save it", got["pause"]["queue, fixed, stops on SUSPENDED"])
	}
	if got["partition-minority"]["queue, fixed, stops on SUSPENDED"]["mutual exclusion violated"] == 0 {
		t.Errorf("partition-minority / stops on SUSPENDED: %v; want the minority server to keep its client unaware while the leader expires the session", got["partition-minority"]["queue, fixed, stops on SUSPENDED"])
	}
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
