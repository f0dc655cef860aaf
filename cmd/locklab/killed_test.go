package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// midWriteEnv makes this test binary, run as a child, be 'locklab explore
// --out cx.yaml' that stops with its counterexample written under the
// temporary name, before the rename, and waits there to be killed.
const midWriteEnv = "LOCKLAB_TEST_EXPLORE_STOPS_MID_WRITE"

var exploreArgs = []string{"explore", "redlock", "--faults", "clock", "--runs", "2000", "--workers", "1", "--out", "cx.yaml"}

func TestExploreChildStoppedMidWrite(t *testing.T) {
	if os.Getenv(midWriteEnv) == "" {
		t.Skip("the child of TestKilledMidWriteLeavesNoTemporaryBehind")
	}
	beforeRename = func(tmp string) {
		fmt.Fprintf(os.Stderr, "\nstopped mid-write: %s\n", filepath.Base(tmp))
		time.Sleep(time.Hour) // until killed
	}
	os.Exit(run(exploreArgs, os.Stdout, os.Stderr))
}

// Issue 25: 'locklab explore --out' killed mid-write — by kill -9, or by a
// second Ctrl-C, which quits at once — leaves its temporary file; the next
// write of the same file removes it and writes the counterexample whole.
func TestKilledMidWriteLeavesNoTemporaryBehind(t *testing.T) {
	for _, c := range []struct {
		name string
		kill func(p *os.Process)
	}{
		{"kill -9", func(p *os.Process) { p.Signal(syscall.SIGKILL) }},
		{"second Ctrl-C", func(p *os.Process) { p.Signal(syscall.SIGINT); p.Signal(syscall.SIGINT) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			child := exec.Command(os.Args[0], "-test.run=^TestExploreChildStoppedMidWrite$")
			child.Env = append(os.Environ(), midWriteEnv+"=1")
			child.Dir = dir
			var stderr lockedBuffer
			child.Stderr = &stderr
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- child.Wait() }()
			for !strings.Contains(stderr.String(), "stopped mid-write: ") {
				select {
				case err := <-done:
					t.Fatalf("the child ended before writing (%v):\n%s", err, stderr.String())
				case <-time.After(10 * time.Millisecond):
				}
			}
			c.kill(child.Process)
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				child.Process.Kill()
				t.Fatal("the child outlived its kill")
			}
			if st := child.ProcessState; st.Success() {
				t.Fatalf("the child finished: %v", st)
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".cx.yaml.tmp-*"))
			if len(left) != 1 || exists(filepath.Join(dir, "cx.yaml")) {
				t.Fatalf("after the kill: temporaries %v, cx.yaml written: %v", left, exists(filepath.Join(dir, "cx.yaml")))
			}
			code, out, errs := runCLIIn(t, dir, exploreArgs...)
			if code != 1 {
				t.Fatalf("the next explore: exit %d\n%s\n%s", code, out, errs)
			}
			assertNoTempFiles(t, dir)
			if code, _, errs := runCLIIn(t, dir, "replay", "cx.yaml"); code != 0 {
				t.Fatalf("the counterexample written after the kill does not replay: exit %d %s", code, errs)
			}
		})
	}
}
