package locktest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A new counterexample is saved beside the old one, never over it; the
// next run replays the old one first and says which it replayed (issue
// 31, item 5: a -locktest.seed run replaced saved counterexamples).
func TestFailfilesAreKeptBeside(t *testing.T) {
	got := observeFindings(t)
	opt := Options{TTL: 2 * time.Second, Classes: []Class{Stall}, Expect: Expect{Stall: Any}}
	Run(t, setNXLock(true), opt)
	dir := filepath.Join("testdata", "locktest", t.Name())
	first, err := os.ReadFile(filepath.Join(dir, "stall.yaml"))
	if err != nil {
		t.Fatalf("no failfile after the first run: %v", err)
	}
	*flagSeed = 7
	Run(t, setNXLock(true), opt)
	*flagSeed = 0
	if got[Stall].prop == 0 {
		t.Fatalf("seed 7 found nothing: %+v", got[Stall])
	}
	again, _ := os.ReadFile(filepath.Join(dir, "stall.yaml"))
	if !bytes.Equal(first, again) {
		t.Fatalf("the seed 7 run replaced stall.yaml")
	}
	more, _ := filepath.Glob(filepath.Join(dir, "stall-*.yaml"))
	if len(more) != 1 {
		t.Fatalf("want the seed 7 counterexample beside stall.yaml, found %v", more)
	}
	if w := got[Stall].what; !strings.Contains(w, "saved beside the 1 earlier counterexample(s) of this class ("+filepath.Join(dir, "stall.yaml")+")") {
		t.Errorf("the seed 7 finding does not say it was saved beside the old one: %q", w)
	}
	Run(t, setNXLock(true), opt)
	if w := got[Stall].what; !strings.Contains(w, "the saved counterexample "+filepath.Join(dir, "stall.yaml")+", replayed instead of exploring seed 1 (1 of 2 saved for this class;") {
		t.Errorf("the third run does not say it replayed stall.yaml first: %q", w)
	}
}
