package mssqlnode

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/locklab/locklab/sim/event"
)

// The lock facts of a reply, as the Postgres and MySQL codecs give theirs
// (sim/event/kinds.go, db.lock.*): what sp_getapplock returned (0 or 1:
// granted; -1 timeout, -2 cancelled, -3 deadlock victim, -999 a parameter
// or other error: refused), what sp_releaseapplock returned (0: released;
// -999: the session did not hold it), and the locks a session lets go
// without asking: a request carrying the reset-connection flag ends the
// session's locks and its transaction before it runs (sp_reset_connection,
// query.go's reset), COMMIT and ROLLBACK end the transaction's locks
// (sp_getapplock, Remarks: "Locks associated with the current transaction
// are released when the transaction commits or rolls back"). Each fact
// is read from the reply's tokens ([MS-TDS] 2.2.7), never from the
// server's state, and released locks are named one by one, as granted.

// heldLock is one lock the session holds, with its owner ("Session" or
// "Transaction") and how many grants stack on it.
type heldLock struct {
	key, owner string
	count      int
}

// reply is what a reply's tokens say: the first column of its first row
// (the SELECT @r after the EXEC) or, for a procedure called by name, its
// RETURNSTATUS; and its first error.
type reply struct {
	value    int64
	hasValue bool
	status   int64
	hasStat  bool
	err      string
}

// facts are the lock facts of rq's reply, and the codec's new holdings.
func (c *Codec) facts(rq request, r reply) []event.Event {
	var out []event.Event
	if rq.byName && r.hasStat {
		r.value, r.hasValue = r.status, true
	}
	release := func(op string, keep func(heldLock) bool) {
		var kept []heldLock
		for _, h := range c.held {
			if keep(h) {
				kept = append(kept, h)
				continue
			}
			for range h.count {
				out = append(out, event.Event{Kind: event.DBLockReleased, Op: op, Key: h.key})
			}
		}
		c.held = kept
	}
	if rq.reset {
		release("sp_reset_connection", func(heldLock) bool { return false })
	}
	switch rq.op {
	case "COMMIT", "ROLLBACK":
		if r.err == "" {
			release(rq.op, func(h heldLock) bool { return h.owner != "Transaction" })
		}
	case "sp_getapplock":
		if rq.key == "" {
			break
		}
		if r.hasValue && r.value >= 0 {
			out = append(out, event.Event{Kind: event.DBLockGranted, Op: rq.op, Key: rq.key})
			c.hold(rq.key, rq.owner)
			break
		}
		why := r.err
		if r.hasValue {
			why = fmt.Sprintf("sp_getapplock returned %d", r.value)
		} else if why == "" {
			break // an answer that says nothing of the lock
		}
		out = append(out, event.Event{Kind: event.DBLockRefused, Op: rq.op, Key: rq.key, Reason: why})
	case "sp_releaseapplock":
		if rq.key == "" {
			break
		}
		if r.hasValue && r.value == 0 {
			out = append(out, event.Event{Kind: event.DBLockReleased, Op: rq.op, Key: rq.key})
			c.unhold(rq.key, rq.owner)
			break
		}
		why := r.err
		if r.hasValue {
			why = fmt.Sprintf("sp_releaseapplock returned %d", r.value)
		} else if why == "" {
			break
		}
		out = append(out, event.Event{Kind: event.DBUnlockNotHeld, Op: rq.op, Key: rq.key, Reason: why})
	}
	return out
}

func (c *Codec) hold(key, owner string) {
	for i := range c.held {
		if c.held[i].key == key && c.held[i].owner == owner {
			c.held[i].count++
			return
		}
	}
	c.held = append(c.held, heldLock{key: key, owner: owner, count: 1})
}

func (c *Codec) unhold(key, owner string) {
	for i := range c.held {
		if c.held[i].key == key && c.held[i].owner == owner {
			if c.held[i].count--; c.held[i].count == 0 {
				c.held = append(c.held[:i], c.held[i+1:]...)
			}
			return
		}
	}
}

// lockArgs reads the resource and owner a lock procedure names: from the
// RPC's parameters, or from "@Resource = …" in the statement, a literal
// or a parameter of sp_executesql. The owner defaults to Transaction, as
// sp_getapplock's @LockOwner does.
func lockArgs(sql string, params map[string]value) (key, owner string) {
	arg := func(name string) string {
		if v, ok := params[name].(string); ok {
			return v
		}
		low := strings.ToLower(sql)
		i := strings.Index(low, name)
		if i < 0 {
			return ""
		}
		rest := strings.TrimSpace(sql[i+len(name):])
		if !strings.HasPrefix(rest, "=") {
			return ""
		}
		rest = strings.TrimSpace(rest[1:])
		end := strings.IndexAny(rest, ", ;]")
		if end < 0 {
			end = len(rest)
		}
		tok := rest[:end]
		if strings.HasPrefix(tok, "@") {
			v, _ := params[strings.ToLower(tok)].(string)
			return v
		}
		return strings.Trim(strings.TrimPrefix(tok, "N"), "'")
	}
	owner = arg("@lockowner")
	if owner == "" {
		owner = "Transaction"
	}
	return arg("@resource"), owner
}

// readReply walks a reply's tokens: the value of the first row's first
// int column, and the first error's message. It stops at a token it does
// not know (the server writes only those tds.go lists).
func readReply(b []byte) reply {
	var r reply
	var cols []byte // the column types of the last COLMETADATA
	rd := &reader{b: b}
	for len(rd.b) > 0 && rd.err == nil {
		switch tok := rd.u8(); tok {
		case tokReturnStatus:
			v := int64(int32(rd.u32()))
			if !r.hasStat && rd.err == nil {
				r.status, r.hasStat = v, true
			}
		case tokDone, 0xFE, 0xFF: // DONE, DONEPROC, DONEINPROC
			rd.take(12)
		case tokEnvChange, tokLoginAck, 0xAB: // INFO
			rd.take(int(rd.u16()))
		case tokError:
			body := &reader{b: rd.take(int(rd.u16()))}
			body.u32()
			body.u8()
			body.u8()
			if msg := body.usVarChar(); r.err == "" {
				r.err = msg
			}
		case tokColMetadata:
			cols = cols[:0]
			for n := int(rd.u16()); n > 0 && rd.err == nil; n-- {
				rd.u32()
				rd.u16()
				typ := rd.u8()
				switch typ {
				case typeIntN:
					rd.u8()
				case typeNVarChar:
					rd.u16()
					rd.take(5)
				default:
					return r
				}
				cols = append(cols, typ)
				rd.bVarChar()
			}
		case tokRow:
			for i, typ := range cols {
				var v []byte
				if typ == typeIntN {
					v = rd.take(int(rd.u8()))
				} else if n := rd.u16(); n != 0xFFFF {
					v = rd.take(int(n))
				}
				if i == 0 && typ == typeIntN && len(v) == 4 && !r.hasValue && rd.err == nil {
					r.value, r.hasValue = int64(int32(binary.LittleEndian.Uint32(v))), true
				}
			}
		default:
			return r
		}
	}
	return r
}
