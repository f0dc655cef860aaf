package mysqlnode

import "testing"

// FuzzStatement feeds arbitrary statement text to one session of a fresh
// server: whatever a client sends, the server answers or refuses, and
// never panics (vitess would catch a panic, but it would end the session).
func FuzzStatement(f *testing.F) {
	for _, q := range []string{
		"SELECT GET_LOCK('job', 10)", "SELECT GET_LOCK(?, ?)", "SELECT RELEASE_LOCK('job'), RELEASE_ALL_LOCKS()",
		"SELECT IS_USED_LOCK(x'6a6f62'), IS_FREE_LOCK(NULL)", "SELECT -(-'1.5e3'), @@wait_timeout, @@nope",
		"SET SESSION wait_timeout = 0", "SET NAMES utf8mb4", "UPDATE fence SET version = version + 1, value = 7 WHERE id = 1 AND version = 0",
		"SELECT version, value, id FROM fence WHERE id = 1", "SELECT * FROM fence", "SELECT a.* FROM fence a", "BEGIN",
		"SELECT get_lock('a', 1e400)", "SELECT get_lock(('a'), -0.0)", "DELETE FROM fence", "SELECT CONNECTION_ID(1)",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		srv := NewServer(Config{})
		ss := &session{id: 1}
		srv.next, srv.sessions[1] = 1, ss
		h := &handler{srv: srv, ss: ss}
		_, _ = h.run(q, nil)
	})
}
