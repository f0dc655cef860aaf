package dbnet

import (
	"fmt"
	"testing"
)

// A segment's key is what fmt's %08d made of its number: bubble digests
// order events by it.
func TestAppendPadded8IsFmt(t *testing.T) {
	for _, n := range []int{0, 7, 12345678, 123456789, 99, -5} {
		if got, want := string(appendPadded8([]byte("x "), n)), fmt.Sprintf("x %08d", n); got != want {
			t.Errorf("appendPadded8(%d) = %q, want %q", n, got, want)
		}
	}
}
