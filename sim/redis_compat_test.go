package sim

import (
	"strings"
	"testing"
	"time"
)

// TestScriptCallErrorsAsRedis7 pins the error texts a real redis-server
// 7.0.15 replied (recorded with redis-cli) for redis.call errors inside a
// script; sim/differential compares them live.
func TestScriptCallErrorsAsRedis7(t *testing.T) {
	w := New(1)
	defer w.Close()
	n := w.NewRedisNode("A", nil)
	p := n.NewPeer()
	n.Exec(p, []string{"SET", "k", "v"})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"EVAL", "return redis.call('incr', KEYS[1])", "1", "k"},
			"-ERR value is not an integer or out of range script: 2bab3b661081db58bd2341920e0ba7cf5dc77b25, on @user_script:1.\r\n"},
		{[]string{"EVAL", "\nreturn redis.call('incr', KEYS[1])", "1", "k"},
			"-ERR value is not an integer or out of range script: 34bb648e38f738ab454fa7d551650823b5806d8d, on @user_script:2.\r\n"},
		{[]string{"EVALSHA", "2BAB3B661081DB58BD2341920E0BA7CF5DC77B25", "1", "k"},
			"-ERR value is not an integer or out of range script: 2bab3b661081db58bd2341920e0ba7cf5dc77b25, on @user_script:1.\r\n"},
		{[]string{"EVAL", ScriptReentrantAcquire, "1", "k", "50", "o"},
			"-WRONGTYPE Operation against a key holding the wrong kind of value script: c0190edfea8d973feff619e97bdb51ffbb43f86b, on @user_script:1.\r\n"},
		// redis.pcall hands the error to the script, which returns it as is.
		{[]string{"EVAL", "return redis.pcall('incr', KEYS[1])", "1", "k"},
			"-ERR value is not an integer or out of range\r\n"},
	} {
		if got := string(n.Exec(p, c.args)); got != c.want {
			t.Errorf("%s:\n got  %q\n want %q", commandSummary(c.args), got, c.want)
		}
	}
}

// TestHincrbyOnTextAsRedis7: redis-server 7.0.15 replies "ERR hash value is
// not an integer" to HINCRBY of a field holding text, also inside a script.
func TestHincrbyOnTextAsRedis7(t *testing.T) {
	w := New(1)
	defer w.Close()
	n := w.NewRedisNode("A", nil)
	p := n.NewPeer()
	n.Exec(p, []string{"HSET", "h", "f", "t1", "n", "1"})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"HINCRBY", "h", "f", "1"}, "-ERR hash value is not an integer\r\n"},
		{[]string{"HINCRBY", "h", "f", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"HINCRBY", "h", "n", "1"}, ":2\r\n"},
		{[]string{"HINCRBY", "h", "new", "1"}, ":1\r\n"},
		{[]string{"EVAL", ScriptReentrantAcquire, "1", "h", "50", "f"},
			"-ERR hash value is not an integer script: c0190edfea8d973feff619e97bdb51ffbb43f86b, on @user_script:1.\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"HINCRBY", "h", "n", "1"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n:3\r\n"},
	} {
		if got := string(n.Exec(p, c.args)); got != c.want {
			t.Errorf("%s:\n got  %q\n want %q", commandSummary(c.args), got, c.want)
		}
	}
}

// TestReplicaReportsTTL: a real Redis 7 replica answers PTTL with the time
// left on the master's expiry (it keeps expiries, it only never acts on
// them); a key without one answers -1 and a logically expired one -2.
func TestReplicaReportsTTL(t *testing.T) {
	w := New(1)
	w.Net.Latency, w.Net.Jitter = 0, 0
	master := w.NewRedisNode("A", nil)
	replica := w.NewRedisNode("B", nil)
	master.Replicate(replica, 0)
	mp, rp := master.NewPeer(), replica.NewPeer()
	var got []string
	w.At(0, func() {
		master.Exec(mp, []string{"SET", "k", "v", "PX", "100000"})
		master.Exec(mp, []string{"SET", "short", "v", "PX", "50"})
		master.Exec(mp, []string{"SET", "plain", "v"})
	})
	w.At(10*time.Millisecond, func() {
		got = append(got, string(replica.Exec(rp, []string{"PTTL", "k"})), string(replica.Exec(rp, []string{"PTTL", "plain"})))
	})
	w.At(60*time.Millisecond, func() {
		got = append(got, string(replica.Exec(rp, []string{"PTTL", "short"})), string(replica.Exec(rp, []string{"PTTL", "k"})))
	})
	if err := w.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	want := []string{":99990\r\n", ":-1\r\n", ":-2\r\n", ":99940\r\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("replica PTTL replies %q, want %q", got, want)
	}
}
