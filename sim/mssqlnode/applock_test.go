package mssqlnode

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func sess(spid int16) Owner { return Owner{SPID: spid, Kind: OwnerSession} }
func xact(spid int16) Owner { return Owner{SPID: spid, Kind: OwnerTransaction} }

func mustGet(t *testing.T, m *Manager, o Owner, name string, mode Mode, timeout time.Duration, want Code, wantWait bool) {
	t.Helper()
	code, waiting := m.Get(o, name, mode, t0, timeout)
	if code != want || waiting != wantWait {
		t.Fatalf("Get(%v, %s, %v, %v) = %d waiting %v; want %d waiting %v", o, name, mode, timeout, code, waiting, want, wantWait)
	}
}

// SQL Server's lock compatibility matrix ("Lock compatibility"), requested
// mode by row, granted mode by column: IS S U IX X.
func TestCompatibilityMatrix(t *testing.T) {
	modes := []Mode{IntentShared, Shared, Update, IntentExclusive, Exclusive}
	want := [5]string{
		"YYYYN", // IS
		"YYYNN", // S
		"YYNNN", // U
		"YNNYN", // IX
		"NNNNN", // X
	}
	for i, req := range modes {
		for j, held := range modes {
			m := NewManager()
			mustGet(t, m, sess(1), "r", held, 0, Granted, false)
			test := m.Test(sess(2), "r", req)
			code, _ := m.Get(sess(2), "r", req, t0, 0)
			got := code == Granted
			if got != (want[i][j] == 'Y') {
				t.Errorf("%v requested while %v held: granted %v, want %c", req, held, got, want[i][j])
			}
			if test != got {
				t.Errorf("APPLOCK_TEST(%v) while %v held says %v, sp_getapplock %v", req, held, test, got)
			}
		}
	}
}

// Return codes 0 and 1, and the waiter granted when the holder releases.
func TestGrantedAtOnceAndAfterWaiting(t *testing.T) {
	m := NewManager()
	mustGet(t, m, sess(1), "r", Exclusive, Forever, Granted, false)
	mustGet(t, m, sess(2), "r", Exclusive, Forever, 0, true)
	code, wakes := m.Release(sess(1), "r")
	if code != Granted || len(wakes) != 1 || wakes[0] != (Wake{Owner: sess(2), Resource: "r", Code: GrantedWaited}) {
		t.Fatalf("release: %d, wakes %+v; want 0 and session 2 granted with 1", code, wakes)
	}
	if got := m.Mode(sess(2), "r"); got != Exclusive {
		t.Fatalf("APPLOCK_MODE after the wait: %v", got)
	}
}

// @LockTimeout 0 answers -1 at once; a positive timeout -1 at its deadline.
func TestTimeouts(t *testing.T) {
	m := NewManager()
	mustGet(t, m, sess(1), "r", Exclusive, Forever, Granted, false)
	mustGet(t, m, sess(2), "r", Shared, 0, TimedOut, false)
	mustGet(t, m, sess(3), "r", Shared, 500*time.Millisecond, 0, true)
	if d := m.NextDeadline(); !d.Equal(t0.Add(500 * time.Millisecond)) {
		t.Fatalf("next deadline %v", d)
	}
	if w := m.Expire(t0.Add(499 * time.Millisecond)); len(w) != 0 {
		t.Fatalf("expired early: %+v", w)
	}
	w := m.Expire(t0.Add(500 * time.Millisecond))
	if len(w) != 1 || w[0].Code != TimedOut || w[0].Owner != sess(3) {
		t.Fatalf("expire: %+v", w)
	}
	mustGet(t, m, sess(4), "r", Exclusive, Forever, 0, true) // -1: waits on
	if w := m.Expire(t0.Add(time.Hour)); len(w) != 0 {
		t.Fatalf("a -1 timeout expired: %+v", w)
	}
}

// -2: a waiting request cancelled (an attention from the client).
func TestCancelled(t *testing.T) {
	m := NewManager()
	mustGet(t, m, sess(1), "r", Exclusive, Forever, Granted, false)
	mustGet(t, m, sess(2), "r", Exclusive, Forever, 0, true)
	w := m.Cancel(2)
	if len(w) != 1 || w[0].Code != Cancelled {
		t.Fatalf("cancel: %+v", w)
	}
	if m.Test(sess(3), "r", Exclusive) {
		t.Fatal("session 1 still holds r")
	}
}

// -3: two sessions each holding what the other waits for; the request
// that closes the cycle is the victim and keeps what it holds.
func TestDeadlockVictim(t *testing.T) {
	m := NewManager()
	mustGet(t, m, xact(1), "a", Exclusive, Forever, Granted, false)
	mustGet(t, m, xact(2), "b", Exclusive, Forever, Granted, false)
	mustGet(t, m, xact(1), "b", Exclusive, Forever, 0, true)
	mustGet(t, m, xact(2), "a", Exclusive, Forever, DeadlockVictim, false)
	if m.Mode(xact(2), "b") != Exclusive {
		t.Fatal("the victim lost what it held (a deadlock does not roll back)")
	}
	// The victim gives b up; session 1's wait is granted.
	w := m.EndTransaction(2)
	if len(w) != 1 || w[0].Owner != xact(1) || w[0].Code != GrantedWaited {
		t.Fatalf("after the victim's rollback: %+v", w)
	}
}

// Counted grants: n gets need n releases; a release of what is not held
// is -999; mixed modes hold the union until the last release.
func TestCountedAndUnion(t *testing.T) {
	m := NewManager()
	mustGet(t, m, sess(1), "r", Shared, 0, Granted, false)
	mustGet(t, m, sess(1), "r", Exclusive, 0, Granted, false)
	if got := m.Mode(sess(1), "r").String(); got != "Exclusive" {
		t.Fatalf("APPLOCK_MODE after Shared then Exclusive: %s", got)
	}
	if c, _ := m.Release(sess(1), "r"); c != Granted {
		t.Fatalf("first release: %d", c)
	}
	if got := m.Mode(sess(1), "r").String(); got != "Exclusive" {
		t.Fatalf("after one of two releases the mode is %s; the documentation keeps the stronger mode until the last", got)
	}
	if m.Test(sess(2), "r", Shared) {
		t.Fatal("another session could take Shared while one grant is left")
	}
	m.Release(sess(1), "r")
	if c, _ := m.Release(sess(1), "r"); c != CallError {
		t.Fatalf("a release of a lock not held: %d, want -999", c)
	}
	if got := m.Mode(sess(1), "r").String(); got != "NoLock" {
		t.Fatalf("after the last release: %s", got)
	}
	for _, tc := range []struct {
		a, b Mode
		want string
	}{{Shared, IntentExclusive, "SharedIntentExclusive"}, {Update, IntentExclusive, "UpdateIntentExclusive"}, {IntentShared, Shared, "Shared"}, {IntentShared, IntentExclusive, "IntentExclusive"}} {
		if got := (tc.a | tc.b).String(); got != tc.want {
			t.Errorf("%v|%v = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}

// Owners: Transaction locks go at the transaction's end, Session locks
// stay until the session ends; the end of a session frees both and
// withdraws its wait.
func TestOwners(t *testing.T) {
	m := NewManager()
	mustGet(t, m, xact(1), "t", Exclusive, 0, Granted, false)
	mustGet(t, m, sess(1), "s", Exclusive, 0, Granted, false)
	m.EndTransaction(1)
	if m.Mode(xact(1), "t") != 0 || m.Mode(sess(1), "s") != Exclusive {
		t.Fatal("commit: the transaction's lock must go and the session's stay")
	}
	mustGet(t, m, sess(2), "s", Exclusive, Forever, 0, true)
	mustGet(t, m, sess(3), "x", Exclusive, 0, Granted, false)
	mustGet(t, m, sess(1), "x", Exclusive, Forever, 0, true)
	w := m.EndSession(1)
	if len(w) != 1 || w[0].Owner != sess(2) || w[0].Resource != "s" {
		t.Fatalf("session end: %+v", w)
	}
	if m.Test(sess(4), "x", Exclusive) {
		t.Fatal("session 3 still holds x")
	}
	if c, _ := m.Release(sess(3), "x"); c != Granted {
		t.Fatal("session 1's withdrawn wait took x")
	}
}

// A new owner waits behind the queue even when its mode fits the holders
// (no starvation of a waiting Exclusive by a stream of Shared).
func TestFIFO(t *testing.T) {
	m := NewManager()
	mustGet(t, m, sess(1), "r", Shared, 0, Granted, false)
	mustGet(t, m, sess(2), "r", Exclusive, Forever, 0, true)
	mustGet(t, m, sess(3), "r", Shared, 0, TimedOut, false)
	if m.Test(sess(3), "r", Shared) {
		t.Fatal("APPLOCK_TEST grants past a queued Exclusive")
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"Shared", "shared", "UPDATE", "IntentShared", "IntentExclusive", "Exclusive"} {
		if _, ok := ParseMode(s); !ok {
			t.Errorf("%s refused", s)
		}
	}
	for _, s := range []string{"SharedIntentExclusive", "NoLock", "", "X"} {
		if _, ok := ParseMode(s); ok {
			t.Errorf("%s accepted (sp_getapplock cannot request it)", s)
		}
	}
}
