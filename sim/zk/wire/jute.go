// Package wire is ZooKeeper's client wire protocol as the server side sees
// it: jute-encoded records in length-prefixed frames over one TCP stream.
//
// The record layouts follow zookeeper-jute/src/main/resources/zookeeper.jute
// (Apache ZooKeeper 3.8): every integer is big-endian, a buffer or a string
// is an int32 length followed by its bytes (length -1 for a null buffer), a
// vector is an int32 count followed by its elements, a bool is one byte.
// A frame is an int32 length followed by that many bytes. The first frame a
// client sends on a connection is a ConnectRequest without a request
// header; every later frame starts with a RequestHeader (xid, type), and
// every frame the server sends after the ConnectResponse starts with a
// ReplyHeader (xid, zxid, err). Watch notifications are replies with xid -1,
// ping replies have xid -2.
//
// The package only encodes and decodes; what the requests do lives in
// package ensemble.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShort means a record ended before all its fields were read.
var ErrShort = errors.New("zk wire: record too short")

// Encoder appends jute fields to a byte slice.
type Encoder struct{ B []byte }

// Int writes a jute int (int32).
func (e *Encoder) Int(v int32) { e.B = binary.BigEndian.AppendUint32(e.B, uint32(v)) }

// Long writes a jute long (int64).
func (e *Encoder) Long(v int64) { e.B = binary.BigEndian.AppendUint64(e.B, uint64(v)) }

// Bool writes a jute boolean (one byte).
func (e *Encoder) Bool(v bool) {
	if v {
		e.B = append(e.B, 1)
	} else {
		e.B = append(e.B, 0)
	}
}

// Buffer writes a jute buffer; nil is written as length -1, as the Java
// server does for a null byte array.
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(b)))
	e.B = append(e.B, b...)
}

// String writes a jute ustring.
func (e *Encoder) String(s string) {
	e.Int(int32(len(s)))
	e.B = append(e.B, s...)
}

// Strings writes a vector<ustring>.
func (e *Encoder) Strings(v []string) {
	e.Int(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// Stat writes the data.Stat record.
func (e *Encoder) Stat(s Stat) {
	e.Long(s.Czxid)
	e.Long(s.Mzxid)
	e.Long(s.Ctime)
	e.Long(s.Mtime)
	e.Int(s.Version)
	e.Int(s.Cversion)
	e.Int(s.Aversion)
	e.Long(s.EphemeralOwner)
	e.Int(s.DataLength)
	e.Int(s.NumChildren)
	e.Long(s.Pzxid)
}

// Frame returns the encoded bytes with their int32 length in front.
func (e *Encoder) Frame() []byte {
	out := make([]byte, 4, 4+len(e.B))
	binary.BigEndian.PutUint32(out, uint32(len(e.B)))
	return append(out, e.B...)
}

// Decoder reads jute fields from a byte slice. The first error sticks:
// after it every read returns a zero value, and Err reports it.
type Decoder struct {
	B   []byte
	off int
	err error
}

// NewDecoder reads b from its start.
func NewDecoder(b []byte) *Decoder { return &Decoder{B: b} }

// Err is the first error met, if any.
func (d *Decoder) Err() error { return d.err }

// Rest is the number of bytes not read yet.
func (d *Decoder) Rest() int { return len(d.B) - d.off }

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || d.off+n > len(d.B) {
		d.err = ErrShort
		return nil
	}
	b := d.B[d.off : d.off+n]
	d.off += n
	return b
}

// Int reads a jute int.
func (d *Decoder) Int() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Long reads a jute long.
func (d *Decoder) Long() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Bool reads a jute boolean.
func (d *Decoder) Bool() bool {
	b := d.take(1)
	return b != nil && b[0] != 0
}

// Buffer reads a jute buffer (nil for length -1).
func (d *Decoder) Buffer() []byte {
	n := d.Int()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < -1 {
		d.err = fmt.Errorf("zk wire: negative buffer length %d", n)
		return nil
	}
	b := d.take(int(n))
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// String reads a jute ustring.
func (d *Decoder) String() string {
	n := d.Int()
	if d.err != nil || n == -1 {
		return ""
	}
	return string(d.take(int(n)))
}

// Strings reads a vector<ustring>.
func (d *Decoder) Strings() []string {
	n := d.Int()
	if d.err != nil || n <= 0 {
		return nil
	}
	if int(n) > d.Rest()/4 {
		d.err = ErrShort
		return nil
	}
	out := make([]string, 0, n)
	for i := int32(0); i < n; i++ {
		out = append(out, d.String())
	}
	return out
}

// Stat reads the data.Stat record.
func (d *Decoder) Stat() Stat {
	return Stat{
		Czxid: d.Long(), Mzxid: d.Long(), Ctime: d.Long(), Mtime: d.Long(),
		Version: d.Int(), Cversion: d.Int(), Aversion: d.Int(),
		EphemeralOwner: d.Long(), DataLength: d.Int(), NumChildren: d.Int(),
		Pzxid: d.Long(),
	}
}

// SplitFrame cuts the first complete frame off a stream buffer. It returns
// the frame's body and the rest of the buffer, or ok=false when the buffer
// does not yet hold a whole frame. A length above max or below zero is a
// protocol error (the Java server closes such a connection: jute.maxbuffer).
func SplitFrame(buf []byte, max int) (body, rest []byte, ok bool, err error) {
	if len(buf) < 4 {
		return nil, buf, false, nil
	}
	n := int(int32(binary.BigEndian.Uint32(buf)))
	if n < 0 || n > max {
		return nil, buf, false, fmt.Errorf("zk wire: frame length %d out of range [0, %d]", n, max)
	}
	if len(buf) < 4+n {
		return nil, buf, false, nil
	}
	return buf[4 : 4+n], buf[4+n:], true, nil
}
