package pgnode

import (
	"reflect"
	"testing"
)

var k1 = Key{A: 1}

func TestAdvisorySessionLocksStack(t *testing.T) {
	tb := NewTable()
	if !tb.Acquire(1, k1, Exclusive, false, false) || !tb.Acquire(1, k1, Exclusive, false, false) {
		t.Fatal("a session must re-acquire its own lock")
	}
	if tb.Acquire(2, k1, Exclusive, false, false) {
		t.Fatal("pg_try_advisory_lock by another session must fail")
	}
	if ok, _ := tb.Unlock(1, k1, Exclusive); !ok {
		t.Fatal("first unlock must report true")
	}
	if tb.Acquire(2, k1, Exclusive, false, false) {
		t.Fatal("one unlock of a twice-taken lock must leave it held")
	}
	if ok, _ := tb.Unlock(1, k1, Exclusive); !ok {
		t.Fatal("second unlock must report true")
	}
	if ok, _ := tb.Unlock(1, k1, Exclusive); ok {
		t.Fatal("unlock of a lock not held must report false")
	}
	if len(tb.Rows()) != 0 {
		t.Fatalf("table must be empty, got %v", tb.Rows())
	}
}

func TestAdvisoryKeySpacesAndShared(t *testing.T) {
	tb := NewTable()
	tb.Acquire(1, Key{A: 1}, Exclusive, false, false)
	if !tb.Acquire(2, Key{Pair: true, A: 0, B: 1}, Exclusive, false, false) {
		t.Fatal("bigint 1 and (0,1) are different locks")
	}
	if !tb.Acquire(3, Key{A: 2}, Shared, false, false) || !tb.Acquire(4, Key{A: 2}, Shared, false, false) {
		t.Fatal("shared locks must be compatible")
	}
	if tb.Acquire(5, Key{A: 2}, Exclusive, false, false) {
		t.Fatal("exclusive must conflict with shared of another session")
	}
	if tb.Acquire(3, Key{A: 2}, Exclusive, false, false) {
		t.Fatal("exclusive must conflict with another session's shared lock")
	}
	tb.Unlock(4, Key{A: 2}, Shared)
	if !tb.Acquire(3, Key{A: 2}, Exclusive, false, false) {
		t.Fatal("a session's own shared lock does not block its exclusive request")
	}
}

func TestAdvisoryXactLocksOutliveUnlock(t *testing.T) {
	tb := NewTable()
	tb.Acquire(1, k1, Exclusive, true, false)
	if ok, _ := tb.Unlock(1, k1, Exclusive); ok {
		t.Fatal("pg_advisory_unlock must not release a transaction-level lock")
	}
	tb.UnlockAll(1)
	if tb.Acquire(2, k1, Exclusive, false, false) {
		t.Fatal("pg_advisory_unlock_all must leave transaction-level locks")
	}
	tb.EndXact(1)
	if !tb.Acquire(2, k1, Exclusive, false, false) {
		t.Fatal("transaction end must release the xact lock")
	}
}

func TestAdvisoryWaitQueueIsFair(t *testing.T) {
	tb := NewTable()
	tb.Acquire(1, k1, Shared, false, false)
	if tb.Acquire(2, k1, Exclusive, false, true) {
		t.Fatal("exclusive must wait behind a shared holder")
	}
	// A new shared request conflicts with the waiting exclusive one, so it
	// queues rather than overtaking it (lock.c checks waitMask first).
	if tb.Acquire(3, k1, Shared, false, false) {
		t.Fatal("shared try-lock must not overtake a waiting exclusive request")
	}
	tb.Acquire(3, k1, Shared, false, true)
	grants := tb.EndSession(1)
	want := []Grant{{Key: k1, Waiter: Waiter{Session: 2, Mode: Exclusive}}}
	if !reflect.DeepEqual(grants, want) {
		t.Fatalf("grants = %v, want %v", grants, want)
	}
	_, grants = tb.Unlock(2, k1, Exclusive)
	want = []Grant{{Key: k1, Waiter: Waiter{Session: 3, Mode: Shared}}}
	if !reflect.DeepEqual(grants, want) {
		t.Fatalf("grants = %v, want %v", grants, want)
	}
	rows := tb.Rows()
	if len(rows) != 1 || rows[0] != (LockRow{Key: k1, Session: 3, Mode: Shared, Granted: true}) {
		t.Fatalf("rows = %v", rows)
	}
}

// A cancelled exclusive request no longer stands ahead of a shared one
// queued behind it: withdrawing it grants the shared request at once.
func TestAdvisoryCancelWaitWakesThoseBehind(t *testing.T) {
	tb := NewTable()
	tb.Acquire(1, k1, Shared, false, false)
	if tb.Acquire(2, k1, Exclusive, false, true) {
		t.Fatal("exclusive granted over a shared hold")
	}
	if tb.Acquire(3, k1, Shared, false, true) {
		t.Fatal("shared request jumped the queued exclusive one")
	}
	found, grants := tb.CancelWait(2)
	want := []Grant{{Key: k1, Waiter: Waiter{Session: 3, Mode: Shared}}}
	if !found || !reflect.DeepEqual(grants, want) {
		t.Fatalf("CancelWait(2) = %v, %+v; want true, %+v", found, grants, want)
	}
	if found, grants := tb.CancelWait(2); found || grants != nil {
		t.Fatalf("second CancelWait(2) = %v, %+v", found, grants)
	}
}
