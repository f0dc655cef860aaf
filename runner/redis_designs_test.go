package runner

// Issue 35's two Redis designs as they are written: Redlock asked node by
// node (redlock-sequential, with the wiki's validity rule as params) and the
// reentrant lock by value equality (reentrant-by-value, with the nested
// section of clients.reenter).

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

// firstEvent returns the first event of kind by actor at or after from.
func firstEvent(evs []event.Event, actor string, kind event.Kind, from time.Duration) (event.Event, bool) {
	for _, e := range evs {
		if e.Actor == actor && e.Kind == kind && e.At >= from {
			return e, true
		}
	}
	return event.Event{}, false
}

// The inner release deletes the key while c1's outer section runs, and c2
// takes the lock in between: the witness is c1's nested release, then c2's
// hold, both before c1's outer release. With Redisson's count (the fixed
// twin) c2 holds only after c1 released for good.
func TestReentrantByValueInnerReleaseFreesOuterHold(t *testing.T) {
	r := mustRun(t, mustGet(t, "reentrant-value-inner-release"), 1, Options{KeepTrace: true})
	in, ok := firstEvent(r.Events, "c1", event.Reentered, 0)
	if !ok {
		t.Fatal("c1 never re-entered")
	}
	out, ok := firstEvent(r.Events, "c1", event.ReentryReleased, in.At)
	if !ok {
		t.Fatal("c1 never released its nested hold")
	}
	c2, ok := firstEvent(r.Events, "c2", event.HoldBegan, 0)
	if !ok {
		t.Fatal("c2 never held the lock")
	}
	o := r.Report.Witness.MutualExclusion
	if o == nil || c2.At < out.At || o.From != c2.At || o.First.Client != "c1" || o.First.EndReason != "release" || o.To <= c2.At {
		t.Fatalf("nested release at %v, c2 holds at %v; overlap %+v: want c2's hold inside c1's outer section, right after the nested release", out.At, c2.At, o)
	}
	// The nested release was a compare-and-delete that deleted the key.
	var deleted bool
	for _, e := range r.Events {
		if e.Kind == event.CommandExecuted && e.Client == "c1" && e.At > in.At && e.At < out.At && strings.Contains(e.Command, "compare-and-delete") && e.Reply == ":1" {
			deleted = true
		}
	}
	if !deleted {
		t.Fatal("no compare-and-delete by c1 deleted the key during its nested section")
	}

	fixed := mustRun(t, mustGet(t, "reentrant-value-inner-release-fixed"), 1, Options{KeepTrace: true})
	if _, ok := firstEvent(fixed.Events, "c1", event.ReentryReleased, 0); !ok {
		t.Fatal("fixed twin: c1 never released its nested hold")
	}
	var c1End time.Duration
	for _, iv := range fixed.History.Intervals {
		if iv.Client == "c1" {
			c1End = iv.End
		}
	}
	for _, iv := range fixed.History.Intervals {
		if iv.Client == "c2" && iv.Start < c1End {
			t.Fatalf("fixed twin: c2 holds from %v, before c1's outer release at %v", iv.Start, c1End)
		}
	}
}

// Node by node: c1 turns to a node only after the previous one answered or
// its per-request timeout ran out (to a dead node, the go-redis handshake
// that precedes the SET is what times out), and two dead nodes cost two
// timeouts.
func TestRedlockSequentialAsksNodeByNode(t *testing.T) {
	r := mustRun(t, mustGet(t, "redlock-sequential-timeouts-add-up"), 1, Options{KeepTrace: true})
	var order []string
	first := map[string]time.Duration{}
	var timeouts int
	for _, e := range r.Events {
		if e.Client != "c1" || len(first) == 5 && e.At > first["E"] {
			continue
		}
		switch e.Kind {
		case event.CommandSent:
			if _, seen := first[e.Node]; !seen {
				first[e.Node] = e.At
				order = append(order, e.Node)
			}
		case event.ReplyTimeout:
			timeouts++
		}
	}
	if strings.Join(order, "") != "ABCDE" {
		t.Fatalf("c1 first turned to the nodes in the order %v; want A, B, C, D, E", order)
	}
	if gap := first["E"] - first["D"]; gap < 50*time.Millisecond {
		t.Fatalf("c1 turned to E %v after D; want at least D's 50ms per-request timeout", gap)
	}
	if timeouts < 1 {
		t.Fatal("c1 saw no reply timeout before turning to E")
	}
	if n := len(r.History.Intervals); n != 0 {
		t.Fatalf("%d holds; the timeouts should eat every attempt's validity", n)
	}
}

// The wiki's rule admits an acquisition of about 1.8 s with a 3 s TTL
// (1800/1000 <= 3/3) and holds the full TTL from its end; the spec's rule
// ends the lease before the keys set at the start expire.
func TestRedlockWikiValidityTruncates(t *testing.T) {
	for _, tc := range []struct {
		id                 string
		minValid, maxValid time.Duration
	}{
		{"redlock-wiki-truncated-validity", 4700 * time.Millisecond, 4900 * time.Millisecond},
		{"redlock-wiki-truncated-validity-spec", 2900 * time.Millisecond, 3000 * time.Millisecond},
	} {
		r := mustRun(t, mustGet(t, tc.id), 1, Options{KeepTrace: true})
		h, ok := firstEvent(r.Events, "c1", event.HoldBegan, 0)
		if !ok {
			t.Fatalf("%s: c1 never held the lock", tc.id)
		}
		if h.At < 1800*time.Millisecond {
			t.Fatalf("%s: c1 holds from %v; want after its 1.8s pause mid-acquisition", tc.id, h.At)
		}
		if h.Validity < tc.minValid || h.Validity > tc.maxValid {
			t.Fatalf("%s: c1's lease ends at %v on its clock; want within [%v, %v]", tc.id, h.Validity, tc.minValid, tc.maxValid)
		}
		var ex bool
		for _, e := range r.Events {
			if e.Kind == event.CommandSent && e.Client == "c1" && strings.Contains(strings.ToLower(e.Command), " ex 3 nx") {
				ex = true
			}
		}
		if !ex {
			t.Fatalf("%s: c1 never sent SET ... EX 3 NX (ex_seconds)", tc.id)
		}
	}
}

func TestRedisDesignsSameTraceAcrossGOMAXPROCS(t *testing.T) {
	for _, id := range []string{"reentrant-value-inner-release", "redlock-sequential-timeouts-add-up", "redlock-wiki-truncated-validity"} {
		s := mustGet(t, id)
		prev := runtime.GOMAXPROCS(1)
		one := mustRun(t, s, 7, Options{}).TraceSHA256
		runtime.GOMAXPROCS(4)
		four := mustRun(t, s, 7, Options{}).TraceSHA256
		runtime.GOMAXPROCS(prev)
		if one != four {
			t.Fatalf("%s seed 7: GOMAXPROCS=1 %s, GOMAXPROCS=4 %s", id, one, four)
		}
	}
}

// clients.reenter needs a reentrant algorithm: a nested acquire of a plain
// lock would wait for its own client. The file says where and what to use.
func TestReenterNeedsReentrantAlgorithm(t *testing.T) {
	data := strings.Replace(base, "clients: {count: 2, cycles: 2}", "clients: {count: 2, cycles: 2, reenter: {after: 1s, hold: 1s}}", 1)
	_, err := scenarios.Parse("x.yaml", []byte(data))
	want := "x.yaml:7:32: clients.reenter: a nested acquire needs a reentrant algorithm, and set-nx-px-lua is not; expected one of reentrant, reentrant-by-value, or no reenter"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	ok := strings.Replace(data, "algorithm: set-nx-px-lua", "algorithm: reentrant-by-value", 1)
	if _, err := scenarios.Parse("x.yaml", []byte(ok)); err != nil {
		t.Fatalf("reentrant-by-value with reenter: %v", err)
	}
	typo := strings.Replace(ok, "hold: 1s", "holds: 1s", 1)
	if _, err := scenarios.Parse("x.yaml", []byte(typo)); err == nil || !strings.Contains(err.Error(), `clients.reenter.holds: unknown field "holds"; expected one of after, hold (did you mean hold?)`) {
		t.Fatalf("typo in reenter: %v", err)
	}
}

// The wiki's params are checked by the algorithm's own Param list.
func TestRedlockSequentialParamsChecked(t *testing.T) {
	data := strings.Replace(base, "algorithm: set-nx-px-lua", "algorithm: redlock-sequential\nparams: {validity: third-whole-second}", 1)
	data = strings.Replace(data, "  - A\n  - {name: B, replica_of: A}", "  - A\n  - B\n  - C", 1)
	_, err := scenarios.Parse("x.yaml", []byte(data))
	if err == nil || !strings.Contains(err.Error(), "params.validity") || !strings.Contains(err.Error(), `expected spec or third-whole-seconds, found "third-whole-second"`) {
		t.Fatalf("bad validity param: %v", err)
	}
}
