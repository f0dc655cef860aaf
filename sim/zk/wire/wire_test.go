package wire

import (
	"bytes"
	"strings"
	"testing"
)

// TestRoundTrip: every field type read back as written, nil and empty
// buffers kept apart (length -1 and 0), as the Java server does.
func TestRoundTrip(t *testing.T) {
	var e Encoder
	st := Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6, Aversion: 7, EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11}
	e.Int(-7)
	e.Long(1 << 40)
	e.Bool(true)
	e.Buffer(nil)
	e.Buffer([]byte{})
	e.Buffer([]byte("xy"))
	e.String("/a/b")
	e.Strings([]string{"c", "d"})
	e.Stat(st)
	d := NewDecoder(e.B)
	if d.Int() != -7 || d.Long() != 1<<40 || !d.Bool() {
		t.Fatal("int, long or bool")
	}
	if b := d.Buffer(); b != nil {
		t.Fatalf("nil buffer read as %q", b)
	}
	if b := d.Buffer(); b == nil || len(b) != 0 {
		t.Fatalf("empty buffer read as %v", b)
	}
	if b := d.Buffer(); string(b) != "xy" {
		t.Fatalf("buffer %q", b)
	}
	if d.String() != "/a/b" || strings.Join(d.Strings(), ",") != "c,d" || d.Stat() != st {
		t.Fatal("string, strings or stat")
	}
	if d.Err() != nil || d.Rest() != 0 {
		t.Fatalf("err %v, %d bytes left", d.Err(), d.Rest())
	}
	if NewDecoder([]byte{0, 0}).Int() != 0 {
		t.Fatal("short read returned a value")
	}
	short := NewDecoder([]byte{0, 0, 0, 9, 'a'})
	if s := short.String(); s != "" || short.Err() != ErrShort {
		t.Fatalf("string longer than the record: %v", short.Err())
	}
}

// TestSplitFrame: whole frames come off a stream in pieces; a length out
// of range is an error, not a hang or a panic.
func TestSplitFrame(t *testing.T) {
	var e Encoder
	e.String("hello")
	f := e.Frame()
	stream := append(append([]byte{}, f...), f[:3]...)
	body, rest, ok, err := SplitFrame(stream, 1<<20)
	if !ok || err != nil || !bytes.Equal(body, e.B) || len(rest) != 3 {
		t.Fatalf("first frame: ok=%v err=%v rest=%d", ok, err, len(rest))
	}
	if _, _, ok, err := SplitFrame(rest, 1<<20); ok || err != nil {
		t.Fatalf("partial frame: ok=%v err=%v", ok, err)
	}
	if _, _, _, err := SplitFrame([]byte{0xff, 0xff, 0xff, 0xff}, 1<<20); err == nil || !strings.Contains(err.Error(), "frame length -1") {
		t.Fatalf("negative length: %v", err)
	}
	if _, _, _, err := SplitFrame([]byte{0x10, 0, 0, 0}, 1<<20); err == nil {
		t.Fatal("length above the maximum accepted")
	}
}

// TestDecodeRequest: a multi as go-zookeeper encodes it, and the errors
// for what the server does not speak.
func TestDecodeRequest(t *testing.T) {
	var e Encoder
	e.Int(42)
	e.Int(OpMulti)
	e.Int(OpCreate)
	e.Bool(false)
	e.Int(-1)
	e.String("/m")
	e.Buffer(nil)
	e.Int(1)
	e.Int(31)
	e.String("world")
	e.String("anyone")
	e.Int(FlagEphemeral)
	e.Int(OpCheck)
	e.Bool(false)
	e.Int(-1)
	e.String("/m")
	e.Int(3)
	e.Int(-1)
	e.Bool(true)
	e.Int(-1)
	r, err := DecodeRequest(e.B)
	if err != nil || r.Xid != 42 || len(r.Ops) != 2 {
		t.Fatalf("multi: %+v %v", r, err)
	}
	if c := r.Ops[0]; c.Op != OpCreate || c.Path != "/m" || c.Flags != FlagEphemeral || len(c.ACL) != 1 || c.ACL[0].Scheme != "world" {
		t.Fatalf("create in multi: %+v", c)
	}
	if c := r.Ops[1]; c.Op != OpCheck || c.Version != 3 {
		t.Fatalf("check in multi: %+v", c)
	}
	var bad Encoder
	bad.Int(1)
	bad.Int(99)
	if _, err := DecodeRequest(bad.B); err == nil || !strings.Contains(err.Error(), "unsupported op 99") {
		t.Fatalf("unknown op: %v", err)
	}
	if _, err := DecodeRequest([]byte{0, 0, 0, 1, 0, 0, 0, 1, 0}); err == nil {
		t.Fatal("truncated create accepted")
	}
}
