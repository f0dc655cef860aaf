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

// FuzzCodec feeds arbitrary segments to a connection's codec, both ways:
// naming a segment never panics, whatever the bytes.
func FuzzCodec(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 3}, []byte{7, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0})
	f.Add([]byte{5, 0, 0, 0, 0x17, 1, 0, 0, 0}, []byte{1, 0, 0, 1, 1, 2, 0, 0, 2, 0xfe, 0})
	f.Add([]byte("\x20\x00\x00\x00\x03SELECT GET_LOCK('a', 0)"), []byte{0xff, 0xff, 0xff, 0, 0xff})
	f.Fuzz(func(t *testing.T, req, reply []byte) {
		c := NewCodec()
		c.Reply(reply)
		c.Request(req)
		c.Request(req)
		c.Reply(reply)
		c.Reply(req)
	})
}

// Length-encoded sizes past the end of a packet (0xfe and eight bytes of
// 0xff) are refused, not sliced.
func TestCodecHugeLengths(t *testing.T) {
	huge := []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if _, _, ok := lenencString(huge); ok {
		t.Fatal("a string longer than its packet was read")
	}
	c := NewCodec()
	c.Reply([]byte{0}) // the greeting
	c.Request([]byte{1, 0, 0, 0, 0})
	seg := append([]byte{byte(len(huge)), 0, 0, 1}, huge...)
	if _, sum, _ := c.Reply(seg); sum == "" {
		t.Fatal("no summary")
	}
}
