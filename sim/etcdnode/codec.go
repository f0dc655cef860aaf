package etcdnode

// Naming the segments of a gRPC connection for the trace and the fault
// rules by the gRPC messages they carry: the HTTP/2 DATA frames (RFC 9113,
// section 4.1: a frame is a 9-byte header — length, type, flags, stream —
// and its payload), so that a line reads "DATA (42 bytes)" instead of a
// byte count.
//
// Only DATA frames are named, by size, in sorted order, without stream
// ids; a segment without one is "control frames". A segment holds what a
// connection's goroutines wrote during one instant (flushconn.go), and
// when two of them write at once gRPC orders their frames, numbers new
// streams, and decides whether a stream the client has just reset still
// gets its trailers (HEADERS, RST_STREAM), in the order the Go scheduler
// ran them. The messages a segment carries do not depend on that order.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/sim/dbnet"
	"github.com/locklab/locklab/sim/event"
)

// clientPreface opens every HTTP/2 connection from the client.
const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// frameCodec names the frames of one direction each; a frame cut across
// segments is named in the segment where it ends.
type frameCodec struct {
	up, down []byte
	preface  bool
}

func newFrameCodec() dbnet.Codec { return &frameCodec{} }

func (c *frameCodec) Request(seg []byte) (string, string) {
	if !c.preface && strings.HasPrefix(string(seg), clientPreface) {
		c.preface = true
		seg = seg[len(clientPreface):]
		return frames(&c.up, seg)
	}
	return frames(&c.up, seg)
}

func (c *frameCodec) Reply(seg []byte) (string, string, []event.Event) {
	op, s := frames(&c.down, seg)
	return op, s, nil
}

// frames names the whole frames in buf+seg and keeps the rest in buf. The
// op (what a fault rule matches) is "DATA" or "control".
func frames(buf *[]byte, seg []byte) (string, string) {
	b := append(*buf, seg...)
	var names []string
	frames := 0
	for len(b) >= 9 {
		n := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		if len(b) < 9+n {
			break
		}
		typ := int(b[3])
		if typ == 0 {
			names = append(names, fmt.Sprintf("DATA (%d bytes)", n))
		}
		frames++
		b = b[9+n:]
	}
	*buf = append([]byte(nil), b...)
	switch {
	case len(names) > 0:
		slices.Sort(names)
		return "DATA", strings.Join(names, ", ")
	case frames > 0:
		return "control", "control frames"
	}
	return "?", "part of a frame"
}
