package mssqlnode

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/sim/event"
)

// Codec names the segments of one TDS connection for the simulated network
// (sim/dbnet): a request is named by what it runs — "sp_getapplock",
// "sp_releaseapplock", "BEGIN", "COMMIT", "ROLLBACK", "KILL", "SELECT" —
// so that a fault can pick "the reply to c1's sp_getapplock"; the summary
// says more (the statement, and "reset" when the request carries the
// reset-connection flag). The LOGIN7 packet is summarized by its name
// only: it carries the client's process id, which is no part of a run.
// Replies are named by the request they answer; their facts are left to
// the events the run records.
//
// A reply's lock facts (facts.go) are read from its tokens: the value
// sp_getapplock or sp_releaseapplock returned, the session's locks that a
// reset-connection request or the transaction's end let go.
type Codec struct {
	pending []request
	held    []heldLock // the locks this connection's session holds, as its replies said
}

// request is one request awaiting its reply: its op, and for a lock
// procedure the resource and owner it names.
type request struct {
	op, key, owner string
	reset          bool
	byName         bool // a procedure called by RPC: its code is the RETURNSTATUS
}

// NewCodec returns the codec of a new connection.
func NewCodec() *Codec { return &Codec{} }

// Request describes a client segment (one TDS packet).
func (c *Codec) Request(seg []byte) (op, summary string) {
	if len(seg) < headerLen {
		return "?", fmt.Sprintf("%d bytes", len(seg))
	}
	typ, status, body := seg[0], seg[1], seg[headerLen:]
	var params map[string]value
	switch typ {
	case pktPrelogin:
		op, summary = "PRELOGIN", "PRELOGIN"
	case pktLogin7:
		op, summary = "LOGIN", "LOGIN7"
	case pktAttention:
		op, summary = "ATTENTION", "ATTENTION (cancel)"
	case pktTransMgr:
		r := &reader{b: body}
		r.allHeaders()
		op = map[uint16]string{5: "BEGIN", 7: "COMMIT", 8: "ROLLBACK"}[r.u16()]
		if op == "" {
			op = "TRANSACTION"
		}
		summary = op + " TRANSACTION"
	case pktSQLBatch:
		r := &reader{b: body}
		r.allHeaders()
		summary = fromUCS2(r.b)
		op = statementOp(summary)
		params = map[string]value{}
	case pktRPC:
		op, summary, params = rpcSummary(body)
	default:
		op, summary = "?", fmt.Sprintf("packet type %d, %d bytes", typ, len(seg))
	}
	if status&statusResetConnection != 0 {
		summary = "[reset connection] " + summary
	}
	if typ != pktAttention {
		rq := request{op: op, reset: status&statusResetConnection != 0, byName: typ == pktRPC && strings.HasPrefix(summary, "EXEC ")}
		if op == "sp_getapplock" || op == "sp_releaseapplock" {
			rq.key, rq.owner = lockArgs(summary, params)
		}
		c.pending = append(c.pending, rq)
	}
	return op, shorten(summary)
}

// rpcSummary names an RPC: sp_executesql by the statement it runs, a
// procedure by its name and parameters.
func rpcSummary(body []byte) (op, summary string, params map[string]value) {
	r := &reader{b: body}
	r.allHeaders()
	proc := ""
	if n := r.u16(); n == 0xFFFF {
		if r.u16() == 10 {
			proc = "sp_executesql"
		}
	} else {
		proc = fromUCS2(r.take(2 * int(n)))
	}
	r.u16()
	var parts []string
	var stmt string
	params = map[string]value{}
	for i := 0; len(r.b) > 0 && r.err == nil; i++ {
		name, v, err := r.param()
		if err != nil {
			break
		}
		params[strings.ToLower(name)] = v
		if proc == "sp_executesql" && i == 0 {
			stmt, _ = v.(string)
			continue
		}
		if proc == "sp_executesql" && i == 1 {
			continue // the declarations
		}
		parts = append(parts, fmt.Sprintf("%s=%v", name, v))
	}
	if proc == "sp_executesql" {
		return statementOp(stmt), stmt + " [" + strings.Join(parts, " ") + "]", params
	}
	return proc, "EXEC " + proc + " " + strings.Join(parts, " "), params
}

// statementOp is the lock procedure a batch calls, or its first keyword.
func statementOp(sql string) string {
	low := strings.ToLower(sql)
	for _, p := range []string{"sp_getapplock", "sp_releaseapplock", "applock_mode", "applock_test"} {
		if strings.Contains(low, p) {
			return p
		}
	}
	if f := strings.Fields(sql); len(f) > 0 {
		return strings.ToUpper(strings.TrimSuffix(f[0], ";"))
	}
	return "?"
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		return s[:157] + "..."
	}
	return s
}

// Reply describes a server segment: the reply to the oldest request not
// yet answered, by size, with the lock facts its tokens state (facts.go).
func (c *Codec) Reply(seg []byte) (op, summary string, facts []event.Event) {
	op = "reply"
	if len(c.pending) > 0 && len(seg) >= headerLen && seg[1]&statusEOM != 0 {
		rq := c.pending[0]
		c.pending = c.pending[1:]
		op = rq.op
		facts = c.facts(rq, readReply(seg[headerLen:]))
	}
	return op, fmt.Sprintf("%d bytes", len(seg)), facts
}
