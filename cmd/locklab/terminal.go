package main

import "io"

// terminalWriter passes text to a terminal with every control character
// but newline and tab removed: C0 (ESC among them), DEL and the C1 range
// (U+0080–U+009F, two bytes in UTF-8). Names in a scenario file (a node
// called "\x1b[2J") reach many lines of output; filtering the stream once,
// where it leaves the program, covers every line instead of each call site
// remembering to (issue 25). JSON output loses nothing: encoding/json
// escapes control characters, and its newlines stay.
type terminalWriter struct {
	w io.Writer
	// c2 is set when the last write ended on 0xC2, the first byte of a
	// C1 rune (or of an ordinary one, such as "é"'s neighbours).
	c2  bool
	out []byte
}

func newTerminalWriter(w io.Writer) *terminalWriter { return &terminalWriter{w: w} }

func (t *terminalWriter) Write(p []byte) (int, error) {
	t.out = t.out[:0]
	for _, b := range p {
		if t.c2 {
			t.c2 = false
			if b >= 0x80 && b <= 0x9f {
				continue // U+0080–U+009F: a C1 control
			}
			t.out = append(t.out, 0xc2)
		}
		switch {
		case b == 0xc2:
			t.c2 = true
		case b == '\n' || b == '\t':
			t.out = append(t.out, b)
		case b < 0x20 || b == 0x7f:
		default:
			t.out = append(t.out, b)
		}
	}
	if _, err := t.w.Write(t.out); err != nil {
		return 0, err
	}
	return len(p), nil
}
