package event

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
	"time"
)

// declaredKinds reads the Kind constants from kinds.go, so a kind added
// without a line in Render fails here rather than printing its Go value
// into a golden trace.
func declaredKinds(t *testing.T) []Kind {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "kinds.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Kind
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					out = append(out, Kind(strings.Trim(lit.Value, `"`)))
				}
			}
		}
	}
	return out
}

func TestEveryKindHasItsOwnLine(t *testing.T) {
	kinds := declaredKinds(t)
	if len(kinds) < 50 {
		t.Fatalf("read %d kinds from kinds.go; the parse missed some", len(kinds))
	}
	seen := map[Kind]bool{}
	for _, k := range kinds {
		if seen[k] {
			t.Errorf("kind %q declared twice", k)
		}
		seen[k] = true
		e := Event{Kind: k, Node: "n1"}
		if got := e.Text(); strings.HasPrefix(got, string(k)+" {") {
			t.Errorf("kind %q has no line of its own in Render: %q", k, got)
		}
	}
}

// The lines below are the wording the golden digests were taken over before
// the trace became events; Render must keep them letter for letter.
func TestRenderKeepsTheTraceWording(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want string
	}{
		{Event{Kind: CommandSent, Node: "r1", Command: "SET lock t1 NX PX 10000"}, "send SET lock t1 NX PX 10000 → r1"},
		{Event{Kind: CommandExecuted, Node: "r1", Command: "SET lock t1 NX PX 10000", Reply: "+OK"}, "SET lock t1 NX PX 10000 → +OK"},
		{Event{Kind: MessageLost, Dir: "request", From: "c1", To: "r2", Command: "GET x", Reason: "partition"}, "lost request c1→r2 GET x (partition)"},
		{Event{Kind: MessageDelayed, Dir: "reply", From: "r1", To: "c1", Command: "GET x → $1", Delay: 1500 * time.Millisecond, Reason: "slow link"}, "delayed reply r1→c1 GET x → $1 by 1.5s (slow link)"},
		{Event{Kind: ReplyTimeout, Node: "r1"}, "timeout waiting for r1"},
		{Event{Kind: ReplyTimeout, Node: "store", Op: "READ"}, "timeout waiting for READ from store"},
		{Event{Kind: ConnectionDialed, Node: "r2", From: "r1"}, "dial r2 (idle connection to r1 dropped at +switch-master)"},
		{Event{Kind: ReplicationApplied, Command: "SET lock t1 PXAT 10000", Offset: 42}, "replicated SET lock t1 PXAT 10000 (offset 42)"},
		{Event{Kind: ReplicationLost, From: "r1", To: "r2", Command: "DEL lock"}, "replication of DEL lock to r2 lost: r1 is down"},
		{Event{Kind: NodeRestarted, Persistence: "aof-everysec", Count: 3, Keys: 1}, `node restart with persistence "aof-everysec" (3 writes replayed, 1 keys)`},
		{Event{Kind: HoldBegan, Resource: "res", LockValue: "t1", FencingToken: 7, Validity: 9500 * time.Millisecond}, "holds res (token t1, fence 7, valid until 9.5s on its clock)"},
		{Event{Kind: SessionCreated, Session: "0x1", Conn: "c1#1>zk1", Timeout: 4 * time.Second}, "session 0x1 created for c1#1>zk1 (timeout 4s)"},
		{Event{Kind: ConnClosedBy, Conn: "c1#1>zk1", Reason: "server"}, "c1#1>zk1 closed by the server"},
		{Event{Kind: LinkCut, From: "c1", To: "zk2"}, "link c1–zk2 cut"},
		{Event{Kind: DBKeepaliveFailed, Conn: "c1#1>db1", Count: 2, Total: 3}, "keepalive probe 2 of 3 on c1#1>db1 unanswered"},
		{Event{Kind: DBSessionEnded, Conn: "c1#1>db1", Reason: "keepalive: 3 probes unanswered"}, "backend of c1#1>db1 ends (keepalive: 3 probes unanswered): its session locks are released"},
		{Event{Kind: DBLockGranted, Op: "pg_try_advisory_lock", Key: "42", Conn: "pgbouncer#1>db1"}, "pg_try_advisory_lock: lock 42 granted to the backend of pgbouncer#1>db1"},
		{Event{Kind: DBUnlockNotHeld, Op: "pg_advisory_unlock", Key: "42", Conn: "pgbouncer#2>db1"}, "pg_advisory_unlock: the backend of pgbouncer#2>db1 does not hold lock 42 (false)"},
		{Event{Kind: DBPromoted, Node: "db2", To: "primary"}, "promoted: now answers for the address primary, without any of the old primary's advisory locks"},
		{Event{Kind: DBPoolMapped, Conn: "c1#1>pgbouncer", Session: "pgbouncer#1>db1", Reason: "assigned"}, "pool: c1#1>pgbouncer is served by pgbouncer#1>db1"},
		{Event{Kind: Note, Note: "anything at all"}, "anything at all"},
	} {
		if got := c.e.Text(); got != c.want {
			t.Errorf("%s renders %q, want %q", c.e.Kind, got, c.want)
		}
	}
}
