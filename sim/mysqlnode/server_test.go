package mysqlnode

import (
	"context"
	"sync"
	"testing"
)

// The lock functions through the unmodified driver, text and prepared.
func TestLockFunctionsThroughTheDriver(t *testing.T) {
	ctx := context.Background()
	srv := NewServer(Config{})
	db := simDB(t, srv)
	a, b := pinned(t, db), pinned(t, db)
	steps := []struct {
		c     querier
		query string
		args  []any
		want  string
	}{
		{a, "SELECT CONNECTION_ID()", nil, "1"},
		{b, "SELECT CONNECTION_ID()", nil, "2"},
		{a, "SELECT GET_LOCK('job', 0)", nil, "1"},
		{a, "SELECT GET_LOCK(?, ?)", []any{"job", 0}, "1"},
		{b, "SELECT GET_LOCK(?, ?)", []any{"job", 0}, "0"},
		{b, "SELECT IS_USED_LOCK('job'), IS_FREE_LOCK('job'), IS_FREE_LOCK('other')", nil, "1 0 1"},
		{b, "SELECT RELEASE_LOCK('job')", nil, "0"},
		{b, "SELECT RELEASE_LOCK('nobody')", nil, "NULL"},
		{a, "SELECT RELEASE_LOCK(?)", []any{"job"}, "1"},
		{b, "SELECT GET_LOCK('job', 0)", nil, "0"},
		{a, "SELECT GET_LOCK('Job', 0), RELEASE_ALL_LOCKS()", nil, "1 2"},
		{b, "SELECT GET_LOCK('job', 0), GET_LOCK('job', -1), GET_LOCK('', 0), GET_LOCK(NULL, 0)", nil, "1 NULL NULL NULL"},
		{b, "SELECT get_lock(5, 0)", nil, "ERROR 4079 (HY000): Illegal parameter data type int for operation 'get_lock'"},
		{b, "SELECT get_lok('a', 0)", nil, "ERROR 1305 (42000): FUNCTION lab.get_lok does not exist"},
		{b, "SELECT release_lock('a', 'b')", nil, "ERROR 1582 (42000): Incorrect parameter count in the call to native function 'release_lock'"},
	}
	for i, s := range steps {
		if got := answer(ctx, s.c, s.query, s.args...); got != s.want {
			t.Fatalf("step %d %s %v: got %q, want %q", i, s.query, s.args, got, s.want)
		}
	}
}

// The bytes a server sends depend only on what it is sent: vitess draws
// the handshake salt from crypto/rand, and the server replaces it with
// one derived from the connection id.
func TestServerBytesAreDeterministic(t *testing.T) {
	record := func() string {
		srv := NewServer(Config{})
		var sent []byte
		var mu sync.Mutex
		db := simDB(t, srv)
		db.SetMaxIdleConns(0)
		srv.tap = func(_ Session, p []byte) {
			mu.Lock()
			sent = append(sent, p...)
			mu.Unlock()
		}
		c := pinned(t, db)
		mustAnswer(t, c, "1", "SELECT GET_LOCK('job', 0)")
		c.Close()
		db.Close()
		mu.Lock()
		defer mu.Unlock()
		return string(sent)
	}
	first, second := record(), record()
	if first != second || len(first) < 50 {
		t.Fatalf("two runs sent different bytes (%d and %d)", len(first), len(second))
	}
}
