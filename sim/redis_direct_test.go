package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// directSession is one client's commands through every path the direct
// path must keep as the wire path does: a script loaded by EVALSHA's
// NOSCRIPT and EVAL (go-redis's Script.Run), nil and integer and status
// replies, a transaction (go-redis's own pipeline connection), a reply
// lost on the way (timeout, the connection closed and dialed again), a
// write refused by a replica (READONLY, which makes go-redis retire the
// connection), an error inside a script's reply. It returns every value
// and error go-redis handed back, rendered with their Go types.
func directSession(t *testing.T, direct bool) (trace string, out []string, taken int) {
	w := New(3)
	master := w.NewRedisNode("A", nil)
	master.ScriptFastPath = NativeScripts
	replica := w.NewRedisNode("R", nil)
	master.Replicate(replica, 10*time.Millisecond)
	h := w.NewHost("c1", nil)
	c := master.NewClient(h, ClientOptions{Direct: direct})
	cr := replica.NewClient(h, ClientOptions{Direct: direct})
	lost := false
	w.Net.AddFilter(func(m *Message) (bool, time.Duration, string) {
		if m.Dir == Reply && m.Op == "GET" && !lost {
			lost = true
			return true, 0, "test: lose the first GET's reply"
		}
		return false, 0, ""
	})
	release := redis.NewScript(ScriptCompareAndDelete)
	note := func(v any, err error) {
		out = append(out, fmt.Sprintf("%T %#v | %T %v", v, v, err, err))
	}
	h.Spawn("c1", 0, func(p *Process) {
		ctx := context.Background()
		note(c.Get(ctx, "lock").Result()) // reply lost: timeout
		note(c.Get(ctx, "lock").Result()) // nil on a new connection
		note(c.SetNX(ctx, "lock", "t1", 2*time.Second).Result())
		note(c.SetArgs(ctx, "lock", "t2", redis.SetArgs{Mode: "NX", TTL: 2 * time.Second}).Result())
		note(c.Incr(ctx, "counter").Result())
		note(release.Run(ctx, c, []string{"lock"}, "t2").Result()) // NOSCRIPT, then EVAL
		note(release.Run(ctx, c, []string{"lock"}, "t1").Result()) // EVALSHA now known
		note(c.Eval(ctx, "return {1, 'two', redis.error_reply('ERR three')}", nil).Result())
		note(c.Eval(ctx, "return redis.error_reply('WRONGTYPE four')", nil).Result())
		cmds, err := c.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			pp.Set(ctx, "k", "v", 0)
			pp.Get(ctx, "k")
			return nil
		})
		for _, cmd := range cmds {
			out = append(out, cmd.String())
		}
		note(nil, err)
		note(cr.Set(ctx, "k", "x", 0).Result()) // READONLY: go-redis retires the connection
		note(cr.Get(ctx, "k").Result())         // on a new one
		note(c.TTL(ctx, "lock").Result())
		note(c.Ping(ctx).Result())
	})
	if err := w.Run(time.Minute); err != nil {
		t.Fatal(err)
	}
	return w.Trace.SHA256(), out, w.DirectCommands
}

// The direct path hands go-redis back the same values and errors, of the
// same types, as the wire path, and leaves the same trace.
func TestDirectPathSameRepliesAndTrace(t *testing.T) {
	wireTrace, wire, _ := directSession(t, false)
	directTrace, direct, taken := directSession(t, true)
	if taken < 10 {
		t.Fatalf("only %d commands took the direct path", taken)
	}
	if strings.Join(wire, "\n") != strings.Join(direct, "\n") {
		t.Errorf("replies differ\nwire:\n%s\ndirect:\n%s", strings.Join(wire, "\n"), strings.Join(direct, "\n"))
	}
	if wireTrace != directTrace {
		t.Errorf("wire trace %s, direct trace %s", wireTrace, directTrace)
	}
	for _, want := range []string{"i/o timeout", "redis: nil", "READONLY", "WRONGTYPE four", "ERR three"} {
		if !strings.Contains(strings.Join(wire, "\n"), want) {
			t.Errorf("the session never saw %q:\n%s", want, strings.Join(wire, "\n"))
		}
	}
	t.Logf("\n%s", strings.Join(direct, "\n"))
}
