package faults

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// drawNames draws the names of a scenario: 1–5 clients, 0–5 nodes, 0–3
// other hosts.
func drawNames(t *rapid.T) Names {
	var n Names
	for i := range rapid.IntRange(1, 5).Draw(t, "clients") {
		n.Clients = append(n.Clients, "c"+string(rune('1'+i)))
	}
	for i := range rapid.IntRange(0, 5).Draw(t, "nodes") {
		n.Nodes = append(n.Nodes, string(rune('A'+i)))
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "others") {
		n.Others = append(n.Others, "zk"+string(rune('1'+i)))
	}
	return n
}

func drawClasses(t *rapid.T) []Class {
	return rapid.SliceOfNDistinct(rapid.SampledFrom(Classes()), 1, -1, rapid.ID[Class]).Draw(t, "classes")
}

func drawSchedule(t *rapid.T, n Names) (Schedule, time.Duration) {
	seed := rapid.Uint64().Draw(t, "seed")
	horizon := time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "horizon"))
	ttl := time.Duration(rapid.Int64Range(1, int64(time.Minute)).Draw(t, "ttl"))
	return Generate(rand.New(rand.NewPCG(seed, 0)), drawClasses(t), n, horizon, ttl), horizon
}

func TestGeneratedFaultsAreValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := drawNames(t)
		s, horizon := drawSchedule(t, n)
		if len(s) > 4 {
			t.Fatalf("%d faults, want at most 4", len(s))
		}
		if !slices.IsSortedFunc(s, func(a, b Fault) int { return cmp.Compare(startKey(a), startKey(b)) }) {
			t.Fatalf("faults not in the order they take effect: %v", s)
		}
		for i, f := range s {
			if f.Kind == Delay && f.Count == 0 {
				t.Fatalf("faults[%d] %s delays an unbounded number of messages", i, f)
			}
			if err := f.Validate(n); err != nil {
				t.Fatalf("faults[%d] %s: %v", i, f, err)
			}
			if f.At != nil && *f.At > 0 && f.At.D() >= horizon {
				t.Fatalf("faults[%d] %s is beyond the horizon %v", i, f, horizon)
			}
			if _, ok := ClassOf(f); !ok {
				t.Fatalf("faults[%d] %s has no class", i, f)
			}
		}
	})
}

func TestGenerateDrawsOnlyEnabledClasses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := Names{Clients: []string{"c1", "c2"}, Nodes: []string{"A", "B", "C"}}
		enabled := drawClasses(t)
		seed := rapid.Uint64().Draw(t, "seed")
		s := Generate(rand.New(rand.NewPCG(seed, 1)), enabled, n, 10*time.Second, 2*time.Second)
		if len(s) == 0 {
			t.Fatalf("empty schedule although %v all apply", enabled)
		}
		for _, c := range s.Classes() {
			if !slices.Contains(enabled, c) {
				t.Fatalf("class %s drawn, enabled %v", c, enabled)
			}
		}
	})
}

func TestGenerateIsDeterministic(t *testing.T) {
	n := Names{Clients: []string{"c1", "c2", "c3"}, Nodes: []string{"A", "B", "C", "D", "E"}}
	for seed := range uint64(200) {
		a := Generate(rand.New(rand.NewPCG(seed, 7)), Classes(), n, 8*time.Second, 2*time.Second)
		b := Generate(rand.New(rand.NewPCG(seed, 7)), Classes(), n, 8*time.Second, 2*time.Second)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two draws differ:\n%v\n%v", seed, a, b)
		}
	}
}

// TestGenerateCoversEveryClassAndShape checks that, over a few hundred
// draws, each class shows up and each class shows the shapes its help text
// promises (pauses longer than the TTL, backward jumps, one-way partitions).
func TestGenerateCoversEveryClassAndShape(t *testing.T) {
	n := Names{Clients: []string{"c1", "c2", "c3"}, Nodes: []string{"A", "B", "C", "D", "E"}}
	ttl := 2 * time.Second
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		for _, f := range Generate(rng, Classes(), n, 8*time.Second, ttl) {
			c, _ := ClassOf(f)
			seen[string(c)] = true
			switch {
			case f.Kind == Pause && f.Duration.D() > ttl:
				seen["pause > ttl"] = true
			case f.Kind == Pause && f.After != nil:
				seen["pause after a reply"] = true
			case f.Kind == Delay && f.Duration.D() > ttl:
				seen["delay > ttl"] = true
			case f.Kind == ClockJump && f.Jump < 0:
				seen["backward jump"] = true
			case f.Kind == Partition && f.OneWay:
				seen["one-way partition"] = true
			case f.Kind == Drop && f.Probability > 0:
				seen["drop with probability"] = true
			case f.Kind == NodeCrash && f.Persistence == "always":
				seen["restart with fsync always"] = true
			case f.Kind == Drift && f.PPM < 0:
				seen["slow drift"] = true
			}
		}
	}
	want := []string{"pause > ttl", "pause after a reply", "delay > ttl", "backward jump", "one-way partition",
		"drop with probability", "restart with fsync always", "slow drift"}
	for _, c := range Classes() {
		want = append(want, string(c))
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("never drew %s", w)
		}
	}
}

func TestGenerateSkipsClassesWithNothingToActOn(t *testing.T) {
	// The single-server ZooKeeper model (sim/zk): no Redis node, and no
	// server a restart may crash (Names.Servers is empty).
	n := Names{Clients: []string{"c1"}, Others: []string{"zk1", "zk2", "zk3"}}
	if Applicable(ClassRestart, n) {
		t.Fatal("restart applies without a Redis node")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	if s := Generate(rng, []Class{ClassRestart}, n, time.Second, time.Second); len(s) != 0 {
		t.Fatalf("got %v, want an empty schedule", s)
	}
	for range 100 {
		for _, f := range Generate(rng, []Class{ClassRestart, ClassPause}, n, time.Second, time.Second) {
			if f.Kind != Pause {
				t.Fatalf("drew %s", f)
			}
		}
	}
}

func TestParseClasses(t *testing.T) {
	got, err := ParseClasses(" clock, pause,clock")
	if err != nil || !reflect.DeepEqual(got, []Class{ClassClock, ClassPause}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if got, _ := ParseClasses("all"); !reflect.DeepEqual(got, Classes()) {
		t.Fatalf("all = %v", got)
	}
	_, err = ParseClasses("clock,gc")
	if err == nil || !strings.Contains(err.Error(), `unknown fault class "gc"`) || !strings.Contains(err.Error(), "clock, drift, pause, drop, delay, crash, restart, partition") {
		t.Fatalf("error %v", err)
	}
	if _, err := ParseClasses(" , "); err == nil {
		t.Fatal("an empty list parsed")
	}
	for _, c := range Classes() {
		if ClassSummary(c) == "" {
			t.Errorf("class %s has no summary", c)
		}
	}
}

// size is a measure every shrink step must decrease.
func size(s Schedule) float64 {
	abs := func(d Duration) float64 {
		if d < 0 {
			return float64(-d)
		}
		return float64(d)
	}
	var total float64
	for _, f := range s {
		total += 1 + abs(f.Duration) + abs(f.Jump) + abs(f.RestartAfter) + float64(f.Count)
		if f.PPM < 0 {
			total -= float64(f.PPM)
		} else {
			total += float64(f.PPM)
		}
		if f.At != nil {
			total += abs(*f.At)
		}
		if f.After != nil {
			total += float64(f.After.Nth)
		}
		for _, g := range f.Groups {
			total += float64(len(g))
		}
	}
	return total
}

func TestShrinkCandidatesAreSmallerAndValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := drawNames(t)
		s, _ := drawSchedule(t, n)
		before := size(s)
		var snapshot Schedule
		for i := range s {
			snapshot = append(snapshot, s[i].clone())
		}
		cands := ShrinkCandidates(s)
		if len(s) > 0 && len(cands) < len(s) {
			t.Fatalf("%d candidates for %d faults", len(cands), len(s))
		}
		for i, c := range cands {
			if err := c.Validate(n); err != nil {
				t.Fatalf("candidate %d invalid: %v\n%v", i, err, c)
			}
			if size(c) >= before {
				t.Fatalf("candidate %d is not smaller (%v >= %v):\n%v\nfrom\n%v", i, size(c), before, c, s)
			}
			// Candidates must not alias the original.
			for j := range c {
				if c[j].At != nil {
					*c[j].At += Duration(time.Hour)
				}
				if len(c[j].Groups) > 0 && len(c[j].Groups[0]) > 0 {
					c[j].Groups[0][0] = "mutated"
				}
			}
		}
		if !reflect.DeepEqual(s, snapshot) {
			t.Fatalf("ShrinkCandidates changed its input or a candidate aliases it")
		}
	})
}

func TestShrinkReachesAFixpoint(t *testing.T) {
	// Always taking the first candidate ends at the empty schedule.
	n := Names{Clients: []string{"c1", "c2", "c3"}, Nodes: []string{"A", "B", "C"}}
	s := Generate(rand.New(rand.NewPCG(5, 5)), Classes(), n, 8*time.Second, 2*time.Second)
	for steps := 0; len(s) > 0; steps++ {
		if steps > 10 {
			t.Fatalf("no fixpoint after %d steps: %v", steps, s)
		}
		s = ShrinkCandidates(s)[0]
	}
	// Taking the last candidate (the smallest change) also terminates.
	s = Generate(rand.New(rand.NewPCG(6, 6)), Classes(), n, 8*time.Second, 2*time.Second)
	for steps := 0; ; steps++ {
		c := ShrinkCandidates(s)
		if len(c) == 0 {
			break
		}
		if steps > 10_000 {
			t.Fatalf("no fixpoint after %d steps: %v", steps, s)
		}
		s = c[len(c)-1]
	}
}

func TestScheduleClasses(t *testing.T) {
	at := Duration(time.Second)
	s := Schedule{
		{Kind: Partition, Groups: [][]string{{"c1"}, {"A"}}, At: &at},
		{Kind: Pause, Target: "c1", Duration: at, At: &at},
		{Kind: Heal, At: &at},
		{Kind: Pause, Target: "c2", Duration: at, At: &at},
	}
	if got := s.Classes(); !reflect.DeepEqual(got, []Class{ClassPause, ClassPartition}) {
		t.Fatalf("classes %v", got)
	}
}

// A restart can crash a ZooKeeper server as well as a Redis node; a server
// gets no persistence setting (it logs every write before acknowledging
// it), and a schedule with no Redis node and no server has none to draw.
func TestRestartDrawsServers(t *testing.T) {
	zk := Names{Clients: []string{"c1", "c2"}, Others: []string{"zk1", "zk2", "zk3"}, Servers: []string{"zk1", "zk2", "zk3"}}
	if !Applicable(ClassRestart, zk) {
		t.Fatal("restart does not apply to an ensemble's servers")
	}
	if Applicable(ClassRestart, Names{Clients: []string{"c1"}, Others: []string{"store"}}) {
		t.Fatal("restart applies with nothing to restart")
	}
	seen := map[string]bool{}
	for i := range 200 {
		for _, f := range Generate(rand.New(rand.NewPCG(uint64(i), 9)), []Class{ClassRestart}, zk, 10*time.Second, 2*time.Second) {
			if f.Kind != NodeCrash || f.Persistence != "" || !slices.Contains(zk.Servers, f.Target) {
				t.Fatalf("drew %+v", f)
			}
			if err := f.Validate(zk); err != nil {
				t.Fatalf("drew an invalid fault %s: %v", f, err)
			}
			seen[f.Target] = true
		}
	}
	if len(seen) != 3 {
		t.Errorf("restarts hit %v, want every server", seen)
	}
}
