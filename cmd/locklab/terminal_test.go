package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTerminalWriterKeepsTextDropsControls(t *testing.T) {
	var b bytes.Buffer
	w := newTerminalWriter(&b)
	// A C1 control (U+009B, CSI) split across two writes, an ordinary
	// two-byte rune split the same way, ESC, BEL, CR and DEL.
	for _, part := range []string{"a\x1b[31mb\x07\r\x7f\tc\n", "\xc2", "\x9b2Jd \xc2", "\xa9 é\n"} {
		if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
			t.Fatalf("Write(%q) = %d, %v", part, n, err)
		}
	}
	if got, want := b.String(), "a[31mb\tc\n2Jd © é\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Node names with ESC reached the terminal in the header line of a text
// run (issue 25): every line of text output is filtered now.
func TestNodeNameEscapesNeverReachTheTerminal(t *testing.T) {
	dir := inDir(t)
	sc := "id: esc\nalgorithm: set-nx-px-lua\nttl: 1s\nnodes: [\"\\e[2JA\\u009b1m\"]\nclients: {count: 1, cycles: 1}\nduration: 2s\n"
	os.WriteFile(filepath.Join(dir, "esc.yaml"), []byte(sc), 0o644)
	code, out, stderr := runCLI(t, "run", "esc.yaml", "--trace")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "nodes [2JA1m") {
		t.Fatalf("header line lacks the node's printable name:\n%s", out)
	}
	if strings.ContainsAny(out+stderr, "\x1b\u009b") {
		t.Fatalf("control characters reach the terminal: %q", out)
	}
}
