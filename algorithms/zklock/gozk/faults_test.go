package gozk

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
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

var (
	updateTable = flag.Bool("gozk.update-table", false, "rewrite the go-zookeeper × fault table in README.md")
	replayRun   = flag.String("gozk.replay", "", "TestFaultTableReplay: replay one run of the fault table, CLASS/LOCK/SEED (e.g. pause/queue-fixed/6)")
)

// The locks of the table: go-zookeeper's own recipe, unmodified, and
// this package's queue lock naive and fixed, the last also with a holder
// that stops acting when its connection drops (Curator's SUSPENDED). The
// key names a column on the command line (-gozk.replay).
var tableLocks = []struct {
	name, key string
	make      func() workload
}{
	{"go-zookeeper Lock", "gozk-lock", func() workload { return longHold(zkLockWorkload(ensemble.Config{})) }},
	{"queue, naive", "queue-naive", func() workload { return longHold(fixedQueueWorkload(ensemble.Config{}, true)) }},
	{"queue, fixed", "queue-fixed", func() workload { return longHold(fixedQueueWorkload(ensemble.Config{}, false)) }},
	{"queue, fixed, stops on SUSPENDED", "queue-suspended", func() workload {
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

// tableSeeds is the number of seeds (0 … tableSeeds-1) per cell.
const tableSeeds = 20

const (
	faultTableBegin = "<!-- gozk-table:begin (generated by TestGoZookeeperLockFaultTable; go test ./algorithms/zklock/gozk -run '^TestGoZookeeperLockFaultTable$' -gozk.update-table) -->"
	faultTableEnd   = "<!-- gozk-table:end -->"
)

// cell is what one lock did under one fault class: the seeds that gave
// each verdict, in seed order.
type cell map[string][]int

// TestGoZookeeperLockFaultTable puts every lock of the table under every
// fault class, 20 seeds each, checks what must hold, and compares the
// table it draws with the README's, byte for byte: runs are deterministic
// (same seed, same run at any GOMAXPROCS), so a changed cell is a changed
// behaviour of the recipes, the client or the ensemble, and fails here
// until README.md is rewritten with -gozk.update-table.
func TestGoZookeeperLockFaultTable(t *testing.T) {
	got := map[string]map[string]cell{} // got[class][lock]
	for _, fc := range faultClasses {
		got[fc.name] = map[string]cell{}
		for _, l := range tableLocks {
			c := cell{}
			got[fc.name][l.name] = c
			for s := 0; s < tableSeeds; s++ {
				w := l.make()
				w.plan = fc.plan
				o := play(t, w, uint64(s))
				c[o.verdict()] = append(c[o.verdict()], s)
				if o.verdict() != "ok" && testing.Verbose() {
					t.Logf("%s / %s / seed %d: %s %s (%d/%d rounds)", fc.name, l.name, s, o.verdict(), o.overlap, o.done, o.want)
				}
			}
		}
	}

	// What must hold (runs are deterministic, so these are facts about the
	// recipes, not luck). They say why a cell is what it is; the golden
	// below says that it still is.
	n := func(c cell, verdicts ...string) int {
		k := 0
		for _, v := range verdicts {
			k += len(c[v])
		}
		return k
	}
	for _, fc := range []string{"none", "crash-follower", "crash-leader", "drop"} {
		for _, l := range tableLocks {
			if n(got[fc][l.name], "ok") != tableSeeds {
				t.Errorf("%s / %s: %v; a fault the session outlives must not break the lock", fc, l.name, got[fc][l.name])
			}
		}
	}
	for _, fc := range faultClasses {
		fixed := got[fc.name]["queue, fixed"]
		if n(fixed, "liveness violated", "mutual exclusion violated, liveness violated") > 0 {
			t.Errorf("%s / queue, fixed: %v; the fixed recipe must never leave the lock blocked", fc.name, fixed)
		}
	}
	for _, fc := range []string{"partition-client", "partition-minority"} {
		zl := got[fc]["go-zookeeper Lock"]
		if n(zl, "liveness violated", "mutual exclusion violated, liveness violated") == 0 {
			t.Errorf("%s / go-zookeeper Lock: %v; want the orphan node (Lock fails after its create) to block the lock", fc, zl)
		}
	}
	if c := got["partition-client"]["queue, fixed, stops on SUSPENDED"]; n(c, "ok") != tableSeeds {
		t.Errorf("partition-client / stops on SUSPENDED: %v; a holder that stops when its connection drops is safe from its own partition", c)
	}
	if c := got["pause"]["queue, fixed, stops on SUSPENDED"]; n(c, "mutual exclusion violated") == 0 {
		t.Errorf("pause / stops on SUSPENDED: %v; a paused holder cannot notice anything, so stopping on SUSPENDED cannot save it", c)
	}
	if c := got["partition-minority"]["queue, fixed, stops on SUSPENDED"]; n(c, "mutual exclusion violated") == 0 {
		t.Errorf("partition-minority / stops on SUSPENDED: %v; want the minority server to keep its client unaware while the leader expires the session", c)
	}

	table := renderFaultTable(got)
	if testing.Verbose() {
		t.Logf("lock × fault class, %d seeds each:%s", tableSeeds, table)
	}
	readme := filepath.Join("..", "..", "..", "README.md")
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, faultTableBegin), strings.Index(text, faultTableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the table markers %q … %q", faultTableBegin, faultTableEnd)
	}
	current := text[i+len(faultTableBegin) : j]
	if current == table {
		return
	}
	if *updateTable {
		if err := os.WriteFile(readme, []byte(text[:i+len(faultTableBegin)]+table+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("README.md's go-zookeeper × fault table rewritten")
		return
	}
	t.Errorf("README.md's go-zookeeper × fault table differs from the runs (- README, + runs); if the change is meant, rewrite it with\n"+
		"  go test ./algorithms/zklock/gozk -run '^TestGoZookeeperLockFaultTable$' -gozk.update-table\n%s", lineDiff(current, table))
}

// renderFaultTable draws the README's block: one row per fault class
// (consecutive classes whose cells are all the same share a row), one
// column per lock, each cell the verdicts with their counts and the seeds
// that gave each verdict other than ok.
func renderFaultTable(got map[string]map[string]cell) string {
	var b strings.Builder
	b.WriteString("\n| fault class |")
	for _, l := range tableLocks {
		b.WriteString(" " + l.name + " |")
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(tableLocks)) + "\n")
	var names []string
	var cells []string
	flush := func() {
		if names != nil {
			fmt.Fprintf(&b, "| %s | %s |\n", strings.Join(names, ", "), strings.Join(cells, " | "))
		}
	}
	for _, fc := range faultClasses {
		var row []string
		for _, l := range tableLocks {
			row = append(row, renderCell(got[fc.name][l.name]))
		}
		if names != nil && slices.Equal(row, cells) {
			names = append(names, fc.name)
			continue
		}
		flush()
		names, cells = []string{fc.name}, row
	}
	flush()
	keys := make([]string, len(tableLocks))
	for i, l := range tableLocks {
		keys[i] = "`" + l.key + "`"
	}
	fmt.Fprintf(&b, "\nSeeds 0–%d per cell; a verdict other than ok names its seeds. Replay one run with\n"+
		"`go test ./algorithms/zklock/gozk -run '^TestFaultTableReplay$' -gozk.replay=CLASS/LOCK/SEED -v`,\n"+
		"LOCK one of %s (the columns in order).\n", tableSeeds-1, strings.Join(keys, ", "))
	return b.String()
}

// tableVerdicts orders a cell's verdicts and words them for the README.
var tableVerdicts = []struct{ verdict, words string }{
	{"ok", "ok"},
	{"mutual exclusion violated", "mutual exclusion violated"},
	{"liveness violated", "liveness violated"},
	{"mutual exclusion violated, liveness violated", "mutual exclusion and liveness violated"},
}

func renderCell(c cell) string {
	var parts []string
	for _, v := range tableVerdicts {
		seeds := c[v.verdict]
		if len(seeds) == 0 {
			continue
		}
		p := fmt.Sprintf("%s %d/%d", v.words, len(seeds), tableSeeds)
		if v.verdict != "ok" {
			s := make([]string, len(seeds))
			for i, seed := range seeds {
				s[i] = strconv.Itoa(seed)
			}
			word := "seed"
			if len(seeds) > 1 {
				word = "seeds"
			}
			p += fmt.Sprintf(" (%s %s)", word, strings.Join(s, ", "))
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// lineDiff shows how want differs from have, line by line (a longest
// common subsequence; the table is a few lines long).
func lineDiff(have, want string) string {
	a, b := strings.Split(have, "\n"), strings.Split(want, "\n")
	// lcs[i][j] = length of the longest common subsequence of a[i:], b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			// README's line first, then the runs' (as diff -u does).
			out.WriteString("- " + a[i] + "\n")
			i++
		default:
			out.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return out.String()
}

// TestFaultTableReplay replays one run of the table, named by
// -gozk.replay=CLASS/LOCK/SEED, and logs its holds and verdict; skipped
// without the flag.
func TestFaultTableReplay(t *testing.T) {
	if *replayRun == "" {
		t.Skip("replays one run of the fault table: -gozk.replay=CLASS/LOCK/SEED")
	}
	w, seed, err := parseReplay(*replayRun)
	if err != nil {
		t.Fatalf("-gozk.replay=%q: %v", *replayRun, err)
	}
	o := play(t, w, seed)
	for _, h := range o.holds {
		t.Logf("c%d holds [%v, %v]", h.client, h.start, h.end)
	}
	t.Logf("%s: %s %s (%d/%d rounds, %d lock errors, %d elections, %d sessions expired, digest %s)",
		*replayRun, o.verdict(), o.overlap, o.done, o.want, o.errors, o.elections, o.expirations, o.digest[:12])
}

// parseReplay turns CLASS/LOCK/SEED into the table's workload and seed,
// naming the nearest class or lock when one is misspelt.
func parseReplay(s string) (workload, uint64, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return workload{}, 0, fmt.Errorf("want CLASS/LOCK/SEED, e.g. pause/queue-fixed/6")
	}
	var classes, locks []string
	for _, fc := range faultClasses {
		classes = append(classes, fc.name)
	}
	for _, l := range tableLocks {
		locks = append(locks, l.key)
	}
	ci := slices.Index(classes, parts[0])
	if ci < 0 {
		return workload{}, 0, fmt.Errorf("no fault class %q%s; classes: %s", parts[0], didYouMean(parts[0], classes), strings.Join(classes, ", "))
	}
	li := slices.Index(locks, parts[1])
	if li < 0 {
		return workload{}, 0, fmt.Errorf("no lock %q%s; locks: %s", parts[1], didYouMean(parts[1], locks), strings.Join(locks, ", "))
	}
	seed, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return workload{}, 0, fmt.Errorf("seed %q is not a non-negative integer", parts[2])
	}
	w := tableLocks[li].make()
	w.plan = faultClasses[ci].plan
	return w, seed, nil
}

// didYouMean suggests the candidate nearest to s in edit distance, if it
// is near enough to be a slip.
func didYouMean(s string, candidates []string) string {
	best, bestD := "", len(s)/2+2
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// TestFaultTableRendering: a cell names its counts and the seeds of each
// verdict other than ok, identical consecutive rows share a row, and the
// diff a changed cell produces shows the README's line and the runs'.
func TestFaultTableRendering(t *testing.T) {
	got := map[string]map[string]cell{}
	for _, fc := range faultClasses {
		got[fc.name] = map[string]cell{}
		for _, l := range tableLocks {
			got[fc.name][l.name] = cell{"ok": make([]int, tableSeeds)}
		}
	}
	got["pause"]["queue, naive"] = cell{"ok": make([]int, 17), "mutual exclusion violated": {4}, "mutual exclusion violated, liveness violated": {2, 9}}
	before := renderFaultTable(got)
	want := "| none, crash-follower, crash-leader, drop, delay | ok 20/20 | ok 20/20 | ok 20/20 | ok 20/20 |\n" +
		"| pause | ok 20/20 | ok 17/20; mutual exclusion violated 1/20 (seed 4); mutual exclusion and liveness violated 2/20 (seeds 2, 9) | ok 20/20 | ok 20/20 |\n" +
		"| partition-client, partition-minority | ok 20/20 | ok 20/20 | ok 20/20 | ok 20/20 |\n"
	if !strings.Contains(before, want) {
		t.Fatalf("table:\n%s\nwant rows:\n%s", before, want)
	}
	got["pause"]["queue, naive"]["mutual exclusion violated"] = []int{5}
	diff := lineDiff(before, renderFaultTable(got))
	wantDiff := "- | pause | ok 20/20 | ok 17/20; mutual exclusion violated 1/20 (seed 4); mutual exclusion and liveness violated 2/20 (seeds 2, 9) | ok 20/20 | ok 20/20 |\n" +
		"+ | pause | ok 20/20 | ok 17/20; mutual exclusion violated 1/20 (seed 5); mutual exclusion and liveness violated 2/20 (seeds 2, 9) | ok 20/20 | ok 20/20 |\n"
	if !strings.Contains(diff, wantDiff) || strings.Count(diff, "\n- ")+strings.Count(diff, "\n+ ") != 2 {
		t.Errorf("diff:\n%s\nwant exactly:\n%s", diff, wantDiff)
	}
}

// TestFaultTableReplayFlag: a misspelt class or lock is refused with the
// nearest name; a well-formed flag gives the table's workload.
func TestFaultTableReplayFlag(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"pause/queue-fixed", "want CLASS/LOCK/SEED, e.g. pause/queue-fixed/6"},
		{"pasue/queue-fixed/6", `no fault class "pasue" (did you mean "pause"?); classes: none, crash-follower, crash-leader, drop, delay, pause, partition-client, partition-minority`},
		{"pause/queue-fixd/6", `no lock "queue-fixd" (did you mean "queue-fixed"?); locks: gozk-lock, queue-naive, queue-fixed, queue-suspended`},
		{"pause/zookeeper/6", `no lock "zookeeper"; locks: gozk-lock, queue-naive, queue-fixed, queue-suspended`},
		{"pause/queue-fixed/-1", `seed "-1" is not a non-negative integer`},
	} {
		if _, _, err := parseReplay(tc.in); err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
	w, seed, err := parseReplay("partition-client/queue-suspended/7")
	if err != nil || seed != 7 || !w.stopOnLoss || w.plan == nil || w.hold != 6*time.Second {
		t.Errorf("partition-client/queue-suspended/7: seed %d, stopOnLoss %v, plan %v, hold %v, err %v", seed, w.stopOnLoss, w.plan != nil, w.hold, err)
	}
}
