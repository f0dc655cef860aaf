package mysqlnode

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func rows(t *Table) string { return fmt.Sprint(t.Rows()) }

// Waiters are let in first come, first served; one level of a re-entrant
// hold is not enough to let them in.
func TestTableHandsOverInQueueOrder(t *testing.T) {
	tb := NewTable()
	if tb.Acquire(1, "job", t0, 0) != Granted || tb.Acquire(1, "job", t0, 0) != Granted {
		t.Fatal("re-entrant GET_LOCK refused")
	}
	if got := tb.Acquire(2, "job", t0, 0); got != TimedOut {
		t.Fatalf("zero timeout on a taken lock: %v, want TimedOut", got)
	}
	tb.Acquire(3, "job", t0, 10*time.Second)
	tb.Acquire(2, "job", t0.Add(time.Second), 10*time.Second)
	if ok, exists, grants := tb.Release(1, "job"); !ok || !exists || grants != nil {
		t.Fatalf("first release of two levels: %v %v %v", ok, exists, grants)
	}
	if _, _, grants := tb.Release(1, "job"); len(grants) != 1 || grants[0].Session != 3 {
		t.Fatalf("second release granted %v, want session 3 (first in the queue)", grants)
	}
	if got, want := rows(tb), "[{job 3 1 [2]}]"; got != want {
		t.Fatalf("table %s, want %s", got, want)
	}
	if ok, exists, _ := tb.Release(1, "job"); ok || !exists {
		t.Fatal("RELEASE_LOCK of another session's lock must return 0")
	}
	if _, exists, _ := tb.Release(1, "none"); exists {
		t.Fatal("RELEASE_LOCK of a free name must return NULL")
	}
}

// Deadlines are the caller's time: Expire ends the waits due by then, in
// deadline order, and NextDeadline says when to call it next.
func TestTableExpiresWaitsOnTheCallersClock(t *testing.T) {
	tb := NewTable()
	tb.Acquire(1, "a", t0, 0)
	tb.Acquire(1, "b", t0, 0)
	tb.Acquire(2, "a", t0, 3*time.Second)
	tb.Acquire(3, "b", t0, 2*time.Second)
	if next, ok := tb.NextDeadline(); !ok || !next.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("next deadline %v %v, want t0+2s", next, ok)
	}
	if got := tb.Expire(t0.Add(2*time.Second - 1)); got != nil {
		t.Fatalf("expired %v before any deadline", got)
	}
	got := tb.Expire(t0.Add(5 * time.Second))
	if len(got) != 2 || got[0].Session != 3 || got[1].Session != 2 {
		t.Fatalf("expired %v, want sessions 3 then 2 (deadline order)", got)
	}
	if _, ok := tb.NextDeadline(); ok {
		t.Fatal("a deadline is left after every wait expired")
	}
}

// A request that would close a wait-for cycle, here of three sessions,
// is refused at once; requests that do not close one wait.
func TestTableDetectsDeadlockCycles(t *testing.T) {
	tb := NewTable()
	for s, name := range map[Session]string{1: "x", 2: "y", 3: "z"} {
		tb.Acquire(s, name, t0, 0)
	}
	if tb.Acquire(1, "y", t0, time.Second) != Waiting || tb.Acquire(2, "z", t0, time.Second) != Waiting {
		t.Fatal("waits without a cycle must queue")
	}
	if got := tb.Acquire(3, "x", t0, time.Second); got != Deadlock {
		t.Fatalf("closing the cycle 3→1→2→3: %v, want Deadlock", got)
	}
	if _, waits := tb.Waits(3); waits {
		t.Fatal("the deadlock victim must not be queued")
	}
}

// The end of a session withdraws its wait and lets the next session in.
func TestTableEndSession(t *testing.T) {
	tb := NewTable()
	tb.Acquire(1, "job", t0, 0)
	tb.Acquire(1, "job", t0, 0)
	tb.Acquire(2, "other", t0, 0)
	tb.Acquire(2, "job", t0, time.Minute)
	tb.Acquire(3, "other", t0, time.Minute)
	if grants := tb.EndSession(2); len(grants) != 1 || grants[0].Session != 3 || grants[0].Name != "other" {
		t.Fatalf("ending session 2 granted %v, want other to 3", grants)
	}
	if got, want := rows(tb), "[{job 1 2 []} {other 3 1 []}]"; got != want {
		t.Fatalf("table %s, want %s", got, want)
	}
	if n, _ := tb.ReleaseAll(1); n != 2 {
		t.Fatalf("RELEASE_ALL_LOCKS counted %d, want 2 levels", n)
	}
}
