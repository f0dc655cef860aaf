package mssqlnode

// The small subset of TDS 7.4 ([MS-TDS], Microsoft's Tabular Data Stream
// protocol specification) the simulated server speaks: packet framing
// (2.2.3.1 packet header), PRELOGIN (2.2.6.5) without encryption, LOGIN7
// (2.2.6.4, read and ignored past its framing), SQL batches (2.2.6.7), RPC
// requests (2.2.6.6) and transaction manager requests (2.2.6.9), and the
// reply tokens LOGINACK, ENVCHANGE, COLMETADATA, ROW, RETURNSTATUS, ERROR
// and DONE (2.2.7). Tests drive the unmodified go-mssqldb driver against it
// (server_test.go): the driver's own encoder and decoder are the check on
// every byte here.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
)

// Packet types ([MS-TDS] 2.2.3.1.1).
const (
	pktSQLBatch  = 1
	pktRPC       = 3
	pktReply     = 4
	pktAttention = 6
	pktTransMgr  = 14
	pktLogin7    = 16
	pktPrelogin  = 18
)

// Packet status bits ([MS-TDS] 2.2.3.1.2).
const (
	statusEOM             = 0x01
	statusResetConnection = 0x08
)

const headerLen = 8

// packetSize is the size of the packets the server writes: the TDS
// default, which the server never renegotiates.
const packetSize = 4096

// message is one request: the packets of one type up to the end of
// message, joined.
type message struct {
	typ    byte
	status byte // the first packet's status (the reset flag rides on it)
	data   []byte
}

var errBadPacket = errors.New("tds: malformed packet")

// readMessage reads packets until one marks the end of the message.
func readMessage(r io.Reader) (message, error) {
	var m message
	var hdr [headerLen]byte
	for first := true; ; first = false {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return m, err
		}
		n := int(binary.BigEndian.Uint16(hdr[2:4]))
		if n < headerLen || n > 32767 {
			return m, errBadPacket
		}
		if first {
			m.typ, m.status = hdr[0], hdr[1]
		}
		start := len(m.data)
		m.data = append(m.data, make([]byte, n-headerLen)...)
		if _, err := io.ReadFull(r, m.data[start:]); err != nil {
			return m, err
		}
		if hdr[1]&statusEOM != 0 {
			return m, nil
		}
		if len(m.data) > 1<<20 {
			return m, errBadPacket
		}
	}
}

// writeMessage writes data as packets of typ, the last marked EOM, with
// spid in each header.
func writeMessage(w io.Writer, typ byte, spid int16, data []byte) error {
	id := byte(1)
	for {
		n := min(len(data), packetSize-headerLen)
		status := byte(0)
		if n == len(data) {
			status = statusEOM
		}
		pkt := make([]byte, headerLen, headerLen+n)
		pkt[0], pkt[1] = typ, status
		binary.BigEndian.PutUint16(pkt[2:], uint16(headerLen+n))
		binary.BigEndian.PutUint16(pkt[4:], uint16(spid))
		pkt[6] = id
		pkt = append(pkt, data[:n]...)
		if _, err := w.Write(pkt); err != nil {
			return err
		}
		data = data[n:]
		id++
		if status == statusEOM {
			return nil
		}
	}
}

// ucs2 encodes s as UTF-16LE, TDS's character encoding.
func ucs2(s string) []byte {
	u := utf16.Encode([]rune(s))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	return b
}

// fromUCS2 decodes UTF-16LE.
func fromUCS2(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}

// reader walks a request's bytes; the first short read sets err.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errBadPacket
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// bVarChar is B_VARCHAR: a length in characters (one byte), UCS-2.
func (r *reader) bVarChar() string { return fromUCS2(r.take(2 * int(r.u8()))) }

// usVarChar is US_VARCHAR: a length in characters (two bytes), UCS-2.
func (r *reader) usVarChar() string { return fromUCS2(r.take(2 * int(r.u16()))) }

// allHeaders skips ALL_HEADERS ([MS-TDS] 2.2.5.3), returning the
// transaction descriptor it carries.
func (r *reader) allHeaders() (txn uint64) {
	total := int(r.u32())
	h := reader{b: r.take(total - 4)}
	for len(h.b) > 0 && h.err == nil {
		n := int(h.u32())
		typ := h.u16()
		data := h.take(n - 6)
		if typ == 2 && len(data) >= 8 { // transaction descriptor
			txn = binary.LittleEndian.Uint64(data)
		}
	}
	if h.err != nil {
		r.err = h.err
	}
	return txn
}

// value is an RPC parameter's value: an integer or a string (NULL: nil).
type value any

// Type ids ([MS-TDS] 2.2.5.4) of the parameters the driver sends for Go's
// int64, string and bool.
const (
	typeIntN     = 0x26
	typeBitN     = 0x68
	typeNVarChar = 0xE7
	typeInt4     = 0x38
	typeInt8     = 0x7F
)

// param reads one RPC parameter ([MS-TDS] 2.2.6.6 ParameterData): its
// name, status flags, TYPE_INFO and value. Only the types the driver
// sends for int64, string and bool are accepted.
func (r *reader) param() (name string, v value, err error) {
	name = r.bVarChar()
	r.u8() // status flags
	typ := r.u8()
	switch typ {
	case typeIntN, typeBitN:
		r.u8() // max length
		n := int(r.u8())
		b := r.take(n)
		switch n {
		case 0:
			v = nil
		case 1:
			v = int64(b[0])
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(b)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		case 8:
			v = int64(binary.LittleEndian.Uint64(b))
		default:
			return name, nil, fmt.Errorf("tds: integer parameter %s of %d bytes", name, n)
		}
	case typeInt4:
		v = int64(int32(r.u32()))
	case typeInt8:
		v = int64(r.u64())
	case typeNVarChar:
		max := r.u16()
		r.take(5) // collation
		if max == 0xFFFF {
			v = r.plp()
		} else if n := r.u16(); n == 0xFFFF {
			v = nil
		} else {
			v = fromUCS2(r.take(int(n)))
		}
	default:
		return name, nil, fmt.Errorf("tds: parameter %s has type 0x%02X, which this server does not read", name, typ)
	}
	return name, v, r.err
}

// plp reads a partially length-prefixed value ([MS-TDS] 2.2.5.2.3) as
// UCS-2 text.
func (r *reader) plp() value {
	total := r.u64()
	if total == 0xFFFFFFFFFFFFFFFF {
		return nil
	}
	var b []byte
	for r.err == nil {
		n := r.u32()
		if n == 0 {
			break
		}
		b = append(b, r.take(int(n))...)
	}
	return fromUCS2(b)
}

// tokens builds a reply's token stream.
type tokens struct{ b []byte }

func (t *tokens) u8(v byte) { t.b = append(t.b, v) }
func (t *tokens) u16(v uint16) {
	t.b = binary.LittleEndian.AppendUint16(t.b, v)
}
func (t *tokens) u32(v uint32) {
	t.b = binary.LittleEndian.AppendUint32(t.b, v)
}
func (t *tokens) u64(v uint64) {
	t.b = binary.LittleEndian.AppendUint64(t.b, v)
}
func (t *tokens) bVarChar(s string) {
	u := ucs2(s)
	t.u8(byte(len(u) / 2))
	t.b = append(t.b, u...)
}
func (t *tokens) usVarChar(s string) {
	u := ucs2(s)
	t.u16(uint16(len(u) / 2))
	t.b = append(t.b, u...)
}

// Token types ([MS-TDS] 2.2.7).
const (
	tokReturnStatus = 0x79
	tokColMetadata  = 0x81
	tokError        = 0xAA
	tokLoginAck     = 0xAD
	tokRow          = 0xD1
	tokEnvChange    = 0xE3
	tokDone         = 0xFD
)

// DONE status bits ([MS-TDS] 2.2.7.6).
const (
	doneMore  = 0x01
	doneError = 0x02
	doneCount = 0x10
	doneAttn  = 0x20
)

func (t *tokens) done(status uint16, rows uint64) {
	t.u8(tokDone)
	t.u16(status)
	t.u16(0xC1) // CurCmd: SELECT
	t.u64(rows)
}

func (t *tokens) returnStatus(v int32) {
	t.u8(tokReturnStatus)
	t.u32(uint32(v))
}

// envChange writes an ENVCHANGE of type typ with B_VARBYTE (bytes) or
// B_VARCHAR (text) new and old values.
func (t *tokens) envChange(typ byte, newV, oldV []byte) {
	t.u8(tokEnvChange)
	t.u16(uint16(1 + 1 + len(newV) + 1 + len(oldV)))
	t.u8(typ)
	t.u8(byte(len(newV)))
	t.b = append(t.b, newV...)
	t.u8(byte(len(oldV)))
	t.b = append(t.b, oldV...)
}

// sqlError writes an ERROR token (severity 16, a user error).
func (t *tokens) sqlError(number int32, msg, server string) {
	var e tokens
	e.u32(uint32(number))
	e.u8(1)  // state
	e.u8(16) // class
	e.usVarChar(msg)
	e.bVarChar(server)
	e.bVarChar("") // procedure
	e.u32(1)       // line
	t.u8(tokError)
	t.u16(uint16(len(e.b)))
	t.b = append(t.b, e.b...)
}

// column is one result column: an int or an nvarchar.
type column struct {
	name string
	text bool
}

// resultSet writes COLMETADATA and one ROW.
func (t *tokens) resultSet(cols []column, row []value) {
	t.u8(tokColMetadata)
	t.u16(uint16(len(cols)))
	for _, c := range cols {
		t.u32(0)      // user type
		t.u16(0x0001) // flags: nullable
		if c.text {
			t.u8(typeNVarChar)
			t.u16(64)
			t.b = append(t.b, 0x09, 0x04, 0xD0, 0x00, 0x34) // collation: Latin1_General_CI_AS
		} else {
			t.u8(typeIntN)
			t.u8(4)
		}
		t.bVarChar(c.name)
	}
	t.u8(tokRow)
	for i, c := range cols {
		switch v := row[i].(type) {
		case nil:
			if c.text {
				t.u16(0xFFFF)
			} else {
				t.u8(0)
			}
		case string:
			u := ucs2(v)
			t.u16(uint16(len(u)))
			t.b = append(t.b, u...)
		case int64:
			t.u8(4)
			t.u32(uint32(int32(v)))
		}
	}
}
