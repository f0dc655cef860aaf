package pgnode

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/locklab/locklab/sim/event"
)

// Codec names the segments of one connection for the simulated network
// (sim/dbnet): what a client sends is summarized as the statement it
// runs, with its parameters in place ("pg_advisory_lock(42)"), and its op
// is the lock function's name or the statement's keyword, so a fault can
// pick "the reply to c1's pg_advisory_unlock". Replies are read for the
// facts they carry: a lock granted, busy, released, or an unlock on a
// backend that does not hold the lock. The codec reads the protocol's
// framing (PG15 manual, 55.7) and pgproto3's decoders; the server's state
// is not consulted, so the facts are what the client was told.
type Codec struct {
	started    bool              // the startup message was sent
	statements map[string]string // prepared statement name → query
	pending    []unit            // requests awaiting their ReadyForQuery
	batch      *unit             // the extended-protocol batch being sent
}

// unit is one round of the protocol: a Query, or the extended messages up
// to a Sync; its reply ends with ReadyForQuery.
type unit struct {
	op, summary string
	st          Statement
	key         string // the lock key, as SQL shows it
	fence       int64
	known       bool // st was parsed
	value       []byte
	gotRow      bool
	tag         string
	err         string
}

// NewCodec returns the codec of a new connection.
func NewCodec() *Codec { return &Codec{statements: map[string]string{}} }

// frames splits a segment into (type, body) messages.
func frames(seg []byte) (out []struct {
	t    byte
	body []byte
}) {
	for len(seg) >= 5 {
		n := int(binary.BigEndian.Uint32(seg[1:5]))
		if n < 4 || len(seg) < 1+n {
			break
		}
		out = append(out, struct {
			t    byte
			body []byte
		}{seg[0], seg[5 : 1+n]})
		seg = seg[1+n:]
	}
	return out
}

// Request describes a client segment.
func (c *Codec) Request(seg []byte) (op, summary string) {
	if !c.started {
		if len(seg) >= 8 {
			switch binary.BigEndian.Uint32(seg[4:8]) {
			case 80877103:
				return "SSL", "SSLRequest"
			case 80877104:
				return "GSS", "GSSENCRequest"
			case 80877102:
				c.started = true
				return "CANCEL", "CancelRequest"
			}
		}
		c.started = true
		return "STARTUP", "StartupMessage"
	}
	var ops, sums []string
	for _, f := range frames(seg) {
		switch f.t {
		case 'Q':
			var q pgproto3.Query
			if q.Decode(f.body) != nil {
				continue
			}
			u := c.describeQuery(q.String, nil)
			c.pending = append(c.pending, u)
			ops, sums = append(ops, u.op), append(sums, u.summary)
		case 'P':
			var p pgproto3.Parse
			if p.Decode(f.body) == nil {
				c.statements[p.Name] = p.Query
				if c.batch == nil {
					c.batch = &unit{op: "PREPARE", summary: "prepare " + compact(p.Query)}
				}
			}
		case 'B':
			var b pgproto3.Bind
			if b.Decode(f.body) == nil {
				params := make([]*int64, len(b.Parameters))
				for i, raw := range b.Parameters {
					if raw == nil {
						continue
					}
					if v, err := decodeInt(raw, formatAt(b.ParameterFormatCodes, i)); err == nil {
						params[i] = &v
					}
				}
				u := c.describeQuery(c.statements[b.PreparedStatement], params)
				c.batch = &u
			}
		case 'S':
			u := unit{op: "SYNC", summary: "Sync"}
			if c.batch != nil {
				u = *c.batch
			}
			c.batch = nil
			c.pending = append(c.pending, u)
			ops, sums = append(ops, u.op), append(sums, u.summary)
		case 'X':
			ops, sums = append(ops, "TERMINATE"), append(sums, "Terminate")
		}
	}
	if len(ops) == 0 {
		return "?", fmt.Sprintf("%d bytes", len(seg))
	}
	return ops[0], strings.Join(sums, "; ")
}

// describeQuery names a statement with its parameters in place.
func (c *Codec) describeQuery(q string, params []*int64) unit {
	u := unit{op: "SQL", summary: compact(q)}
	st, err := ParseStatement(q)
	if err != nil {
		return u
	}
	u.st, u.known = st, true
	args, null, err := bindArgs(st, params)
	if err != nil {
		return u
	}
	var vals []string
	for _, a := range args {
		vals = append(vals, strconv.FormatInt(a, 10))
	}
	if null {
		vals = []string{"NULL"}
	}
	switch st.Kind {
	case StmtLockCall:
		u.op = st.Func.Name
		u.key = strings.Join(vals, ",")
		u.summary = fmt.Sprintf("%s(%s)", st.Func.Name, u.key)
	case StmtBegin:
		u.op, u.summary = "BEGIN", "BEGIN"
	case StmtCommit:
		u.op, u.summary = "COMMIT", "COMMIT"
	case StmtRollback:
		u.op, u.summary = "ROLLBACK", "ROLLBACK"
	case StmtFenceUpdate:
		u.op = "UPDATE_FENCE"
		if len(args) == 1 {
			u.fence = args[0]
		}
		u.summary = fmt.Sprintf("UPDATE fence SET token = %d WHERE token < %d", u.fence, u.fence)
	case StmtFenceRead:
		u.op, u.summary = "SELECT_FENCE", "SELECT token FROM fence"
	case StmtSelectInt:
		u.op = "SELECT"
	case StmtDiscardAll:
		u.op, u.summary = "DISCARD", "DISCARD ALL"
	}
	return u
}

func compact(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 80 {
		q = q[:77] + "…"
	}
	return q
}

// Reply describes a server segment and the lock facts it tells.
func (c *Codec) Reply(seg []byte) (op, summary string, facts []event.Event) {
	if len(seg) == 1 && (seg[0] == 'N' || seg[0] == 'S') {
		return "SSL", "SSL refused", nil
	}
	var sums []string
	op = "?"
	for _, f := range frames(seg) {
		var u *unit
		if len(c.pending) > 0 {
			u = &c.pending[0]
		}
		switch f.t {
		case 'R':
			op, sums = "STARTUP", append(sums, "AuthenticationOk")
		case 'D':
			var d pgproto3.DataRow
			if u != nil && d.Decode(f.body) == nil && len(d.Values) > 0 {
				u.value, u.gotRow = append([]byte(nil), d.Values[0]...), true
			}
		case 'C':
			var cc pgproto3.CommandComplete
			if u != nil && cc.Decode(f.body) == nil {
				u.tag = string(cc.CommandTag)
			}
		case 'E':
			var e pgproto3.ErrorResponse
			if u != nil && e.Decode(f.body) == nil {
				u.err = fmt.Sprintf("%s (SQLSTATE %s)", e.Message, e.Code)
			}
		case 'Z':
			if u == nil {
				continue // the end of the startup
			}
			op = u.op
			sums = append(sums, u.summary+" → "+u.result())
			if fact, ok := u.fact(); ok {
				facts = append(facts, fact)
			}
			c.pending = c.pending[1:]
		}
	}
	if len(sums) == 0 {
		return op, fmt.Sprintf("%d bytes", len(seg)), nil
	}
	return op, strings.Join(sums, "; "), facts
}

// result is the reply as a person reads it.
func (u *unit) result() string {
	switch {
	case u.err != "":
		return "ERROR " + u.err
	case u.gotRow && u.known && u.st.Kind == StmtLockCall && u.st.Func.ReturnsBool():
		return boolText(u.value)
	case u.gotRow && len(u.value) > 0:
		return string(u.value)
	case u.tag != "":
		return u.tag
	}
	return "ok"
}

// boolText reads a bool in text ("t") or binary (1) format.
func boolText(v []byte) string {
	if len(v) == 1 && (v[0] == 't' || v[0] == 1) {
		return "true"
	}
	return "false"
}

// fact is the lock fact of a completed unit.
func (u *unit) fact() (event.Event, bool) {
	if !u.known {
		return event.Event{}, false
	}
	switch u.st.Kind {
	case StmtDiscardAll:
		if u.err != "" {
			return event.Event{}, false
		}
		return event.Event{Kind: event.DBLockReleased, Op: "DISCARD ALL", Key: "all"}, true
	case StmtFenceUpdate:
		if u.err != "" {
			return event.Event{}, false
		}
		r := "rejected (not above the row's version)"
		if u.tag == "UPDATE 1" {
			r = "accepted"
		}
		return event.Event{Kind: event.DBFenceCompared, FencingToken: u.fence, Reason: r}, true
	case StmtLockCall:
	default:
		return event.Event{}, false
	}
	f := u.st.Func
	ev := event.Event{Op: f.Name, Key: u.key}
	granted := u.err == "" && u.gotRow && (!f.ReturnsBool() || boolText(u.value) == "true")
	switch {
	case f.All:
		if u.err != "" {
			return event.Event{}, false
		}
		ev.Kind, ev.Key = event.DBLockReleased, "all"
	case f.Unlock && granted:
		ev.Kind = event.DBLockReleased
	case f.Unlock:
		ev.Kind = event.DBUnlockNotHeld
	case granted:
		ev.Kind = event.DBLockGranted
	default:
		ev.Kind, ev.Reason = event.DBLockRefused, u.err
	}
	return ev, true
}
