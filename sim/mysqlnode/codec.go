package mysqlnode

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/locklab/locklab/sim/event"
)

// Codec names the segments of one MySQL connection for the simulated
// network (sim/dbnet): what a client sends is summarized as the statement
// it runs, prepared parameters in place ("GET_LOCK('lock', 0)"), and its
// op is the lock function's name or the statement's keyword, so a fault
// can pick "the reply to c1's RELEASE_LOCK". Replies are read for the
// facts they carry: a lock granted or busy, released, or a RELEASE_LOCK
// on a session that does not hold it. The codec reads the protocol's
// framing (MariaDB's client/server protocol: packets, COM_QUERY,
// COM_STMT_PREPARE/EXECUTE, OK/ERR packets, text and binary result rows);
// the server's state is not consulted, so the facts are what the client
// was told. One reply is one segment: the server writes each reply at once.
type Codec struct {
	greeted  bool // the server's greeting went by
	loggedIn bool // the client's handshake response went by
	pending  []unit
	prepared map[uint32]string // statement id → query
}

// unit is one request awaiting its reply.
type unit struct {
	op, summary string
	fn          string // the lock function, lower case, or "fence", "reset"
	key         string
	fence       int64
	prepare     string // the query of a COM_STMT_PREPARE
	binary      bool   // the reply's rows are in the binary protocol
}

// NewCodec returns the codec of a new connection.
func NewCodec() *Codec { return &Codec{prepared: map[uint32]string{}} }

// packets splits a segment into packet payloads (3-byte length, sequence).
func packets(seg []byte) [][]byte {
	var out [][]byte
	for len(seg) >= 4 {
		n := int(seg[0]) | int(seg[1])<<8 | int(seg[2])<<16
		if len(seg) < 4+n {
			break
		}
		out = append(out, seg[4:4+n])
		seg = seg[4+n:]
	}
	return out
}

// Request describes a client segment.
func (c *Codec) Request(seg []byte) (op, summary string) {
	op, summary = "?", fmt.Sprintf("%d bytes", len(seg))
	for _, p := range packets(seg) {
		if len(p) == 0 {
			continue
		}
		if !c.loggedIn {
			c.loggedIn = true
			c.push(unit{op: "LOGIN", summary: "handshake response"})
			op, summary = "LOGIN", "handshake response"
			continue
		}
		var u unit
		switch p[0] {
		case 0x03: // COM_QUERY
			u = describe(string(p[1:]), nil)
		case 0x16: // COM_STMT_PREPARE
			q := string(p[1:])
			u = unit{op: "PREPARE", summary: "PREPARE " + q, prepare: q}
		case 0x17: // COM_STMT_EXECUTE
			if len(p) < 5 {
				continue
			}
			q := c.prepared[binary.LittleEndian.Uint32(p[1:5])]
			u = describe(q, executeParams(p, strings.Count(q, "?")))
			u.binary = true
		case 0x19: // COM_STMT_CLOSE: no reply
			op, summary = "CLOSE", "close statement"
			continue
		case 0x01: // COM_QUIT: no reply
			op, summary = "QUIT", "quit"
			continue
		case 0x0e:
			u = unit{op: "PING", summary: "ping"}
		case 0x02:
			u = unit{op: "USE", summary: "USE " + string(p[1:])}
		case 0x1f:
			u = unit{op: "RESET", summary: "reset connection", fn: "reset"}
		default:
			u = unit{op: fmt.Sprintf("COM_%#x", p[0]), summary: fmt.Sprintf("command %#x", p[0])}
		}
		c.push(u)
		op, summary = u.op, u.summary
	}
	return op, summary
}

func (c *Codec) push(u unit) { c.pending = append(c.pending, u) }

// lockFuncs are the functions whose replies carry lock facts.
var lockFuncs = []string{"RELEASE_ALL_LOCKS", "RELEASE_LOCK", "GET_LOCK", "IS_USED_LOCK", "IS_FREE_LOCK"}

// describe names a statement: params replace its '?' in order.
func describe(q string, params []string) unit {
	for _, p := range params {
		q = strings.Replace(q, "?", p, 1)
	}
	u := unit{summary: q}
	upper := strings.ToUpper(q)
	for _, f := range lockFuncs {
		i := strings.Index(upper, f+"(")
		if i < 0 {
			continue
		}
		u.op, u.fn = f, strings.ToLower(f)
		rest := q[i+len(f)+1:]
		if j := strings.IndexByte(rest, '\''); j >= 0 && strings.TrimSpace(rest[:j]) == "" {
			if k := strings.IndexByte(rest[j+1:], '\''); k >= 0 {
				u.key = rest[j+1 : j+1+k]
			}
		}
		return u
	}
	fields := strings.Fields(upper)
	if len(fields) > 0 {
		u.op = fields[0]
	}
	if u.op == "UPDATE" && len(fields) > 1 && fields[1] == "FENCE" {
		u.fn = "fence"
		// The token written is the version the writer read, plus one.
		if i := strings.LastIndex(upper, "VERSION ="); i >= 0 {
			if v, err := strconv.ParseInt(strings.TrimSpace(q[i+len("VERSION ="):]), 10, 64); err == nil {
				u.fence = v + 1
			}
		}
	}
	return u
}

// executeParams renders a COM_STMT_EXECUTE's parameters as SQL literals:
// statement id, flags, iteration count, NULL bitmap, new-params flag,
// types, values (the binary protocol's encodings of the types
// go-sql-driver sends).
func executeParams(p []byte, n int) []string {
	if n == 0 || len(p) < 10 {
		return nil
	}
	pos := 10
	bitmap := p[pos:min(len(p), pos+(n+7)/8)]
	pos += (n + 7) / 8
	if pos >= len(p) || p[pos] != 1 {
		return nil // types not sent again: not what go-sql-driver does
	}
	pos++
	if pos+2*n > len(p) {
		return nil
	}
	types := p[pos : pos+2*n]
	pos += 2 * n
	out := make([]string, n)
	for i := 0; i < n; i++ {
		if i/8 < len(bitmap) && bitmap[i/8]&(1<<(i%8)) != 0 {
			out[i] = "NULL"
			continue
		}
		switch t := types[2*i]; t {
		case 0x08: // LONGLONG
			if pos+8 > len(p) {
				return nil
			}
			v := binary.LittleEndian.Uint64(p[pos:])
			if types[2*i+1]&0x80 != 0 {
				out[i] = strconv.FormatUint(v, 10)
			} else {
				out[i] = strconv.FormatInt(int64(v), 10)
			}
			pos += 8
		case 0x05: // DOUBLE
			if pos+8 > len(p) {
				return nil
			}
			out[i] = strconv.FormatFloat(float64frombits(binary.LittleEndian.Uint64(p[pos:])), 'g', -1, 64)
			pos += 8
		default: // strings and the rest: length-encoded
			s, used, ok := lenencString(p[pos:])
			if !ok {
				return nil
			}
			out[i] = "'" + s + "'"
			pos += used
		}
	}
	return out
}

// lenencInt reads a length-encoded integer.
func lenencInt(b []byte) (uint64, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfc:
		if len(b) < 3 {
			return 0, 0, false
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3, true
	case 0xfd:
		if len(b) < 4 {
			return 0, 0, false
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, true
	case 0xfe:
		if len(b) < 9 {
			return 0, 0, false
		}
		return binary.LittleEndian.Uint64(b[1:]), 9, true
	}
	return uint64(b[0]), 1, true
}

func lenencString(b []byte) (string, int, bool) {
	n, used, ok := lenencInt(b)
	if !ok || n > uint64(len(b)-used) {
		return "", 0, false
	}
	return string(b[used : used+int(n)]), used + int(n), true
}

// Reply describes a server segment: one whole reply.
func (c *Codec) Reply(seg []byte) (op, summary string, facts []event.Event) {
	if !c.greeted {
		c.greeted = true
		return "HANDSHAKE", "server greeting", nil
	}
	pk := packets(seg)
	if len(c.pending) == 0 || len(pk) == 0 || len(pk[0]) == 0 {
		return "?", fmt.Sprintf("%d bytes", len(seg)), nil
	}
	u := c.pending[0]
	c.pending = c.pending[1:]
	p0 := pk[0]
	var result string
	switch {
	case p0[0] == 0xff && len(p0) >= 3:
		msg := string(p0[3:])
		if len(p0) >= 9 && p0[3] == '#' {
			msg = string(p0[9:])
		}
		result = fmt.Sprintf("ERROR %d: %s", binary.LittleEndian.Uint16(p0[1:3]), msg)
		if u.fn == "get_lock" {
			facts = append(facts, event.Event{Kind: event.DBLockRefused, Op: u.op, Key: u.key, Reason: result})
		}
	case u.op == "PREPARE" && p0[0] == 0x00 && len(p0) >= 5:
		id := binary.LittleEndian.Uint32(p0[1:5])
		c.prepared[id] = u.prepare
		result = fmt.Sprintf("statement %d", id)
	case p0[0] == 0x00 && len(pk) == 1:
		rows, _, _ := lenencInt(p0[1:])
		result = fmt.Sprintf("OK, %d rows", rows)
		switch u.fn {
		case "fence":
			r := "rejected (the row's version moved on)"
			if rows == 1 {
				r = "accepted"
			}
			facts = append(facts, event.Event{Kind: event.DBFenceCompared, FencingToken: u.fence, Reason: r})
		case "reset":
			facts = append(facts, event.Event{Kind: event.DBLockReleased, Op: u.op, Key: "all"})
		}
	default:
		v, ok := firstValue(pk, u.binary)
		if !ok {
			result = "result"
			break
		}
		result = v
		if f, ok := lockFact(u, v); ok {
			facts = append(facts, f)
		}
	}
	return u.op, u.summary + " → " + result, facts
}

// firstValue reads the first column of the first row of a result set:
// column count, column definitions, an EOF unless deprecated, then rows.
func firstValue(pk [][]byte, bin bool) (string, bool) {
	n, _, ok := lenencInt(pk[0])
	if !ok || n >= uint64(len(pk)) {
		return "", false
	}
	i := 1 + int(n)
	if i < len(pk) && len(pk[i]) > 0 && pk[i][0] == 0xfe && len(pk[i]) < 9 {
		i++ // the EOF after the column definitions
	}
	if i >= len(pk) || len(pk[i]) == 0 || (pk[i][0] == 0xfe && len(pk[i]) < 9) {
		return "", false // no row
	}
	row := pk[i]
	if !bin {
		if row[0] == 0xfb {
			return "NULL", true
		}
		s, _, ok := lenencString(row)
		return s, ok
	}
	// Binary row: 0x00, NULL bitmap with an offset of 2, values.
	bitmap := (int(n) + 7 + 2) / 8
	if len(row) < 1+bitmap {
		return "", false
	}
	if row[1]&(1<<2) != 0 {
		return "NULL", true
	}
	vals := row[1+bitmap:]
	if len(vals) >= 8 {
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(vals)), 10), true
	}
	return "", false
}

// lockFact is the fact a lock function's answer states.
func lockFact(u unit, v string) (event.Event, bool) {
	ev := event.Event{Op: u.op, Key: u.key}
	switch u.fn {
	case "get_lock":
		if v == "1" {
			ev.Kind = event.DBLockGranted
		} else {
			ev.Kind, ev.Reason = event.DBLockRefused, "GET_LOCK returned "+v
		}
	case "release_lock":
		switch v {
		case "1":
			ev.Kind = event.DBLockReleased
		case "0":
			ev.Kind, ev.Reason = event.DBUnlockNotHeld, "0: another session holds it"
		default:
			ev.Kind, ev.Reason = event.DBUnlockNotHeld, "NULL: nobody holds it"
		}
	case "release_all_locks":
		if v == "0" {
			return ev, false
		}
		ev.Kind, ev.Key = event.DBLockReleased, "all"
	default:
		return ev, false
	}
	return ev, true
}

func float64frombits(b uint64) float64 { return math.Float64frombits(b) }
