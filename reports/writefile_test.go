package reports

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 32: a report written over a device replaced it with a regular
// file; writeFile refuses any existing path that is not a regular file.
func TestWriteFileRefusesANonRegularTarget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe.html")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	err := writeFile(path, func(w io.Writer) error { _, err := io.WriteString(w, "<html>"); return err })
	if err == nil || !strings.Contains(err.Error(), "it is not a regular file") {
		t.Fatalf("err %v", err)
	}
	if st, _ := os.Lstat(path); st.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the FIFO was replaced: %v", st.Mode())
	}
}
