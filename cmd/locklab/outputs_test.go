package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// deviceNode makes a character device (the numbers of /dev/null) under
// dir, standing in for /dev/full: only root may, so the test skips
// otherwise (the FIFO cases run for anyone).
func deviceNode(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "full")
	if err := syscall.Mknod(path, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("cannot make a device node (not root?): %v", err)
	}
	return path
}

// assertStillKind fails when path is no longer of the file type it was
// made as: a write replaced it.
func assertStillKind(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil || st.Mode().Type() != mode {
		t.Fatalf("%s was replaced: %v %v", path, st.Mode(), err)
	}
}

// Issue 32, item 1: --force onto a device replaced the device with a
// regular file (run, explore and matrix).
func TestOutputOntoADeviceIsRefusedEvenWithForce(t *testing.T) {
	dir := inDir(t)
	dev := deviceNode(t, dir)
	for _, args := range [][]string{
		{"run", "redlock-clock-jump", "--report", dev, "--force"},
		{"run", "redlock-clock-jump", "--events", dev, "--force"},
		{"replay", "redlock-clock-jump", "--report", dev, "--force"},
		{"explore", "redlock", "--runs", "1", "--report", dev, "--force"},
		{"explore", "redlock", "--runs", "1", "--out", dev + ".yaml", "--force"},
		{"matrix", "--seeds", "1", "--algorithms", "redlock", "--classes", "clock", "--report", dev, "--force"},
	} {
		target := dev
		if strings.HasSuffix(args[len(args)-2], ".yaml") {
			target = dev + ".yaml"
			if err := syscall.Mknod(target, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Fatal(err)
			}
		}
		code, out, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "is a character device, not a regular file") || out != "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %s", args, code, out, stderr)
		}
		assertStillKind(t, target, os.ModeDevice|os.ModeCharDevice)
	}
}

func TestOutputOntoAFIFOIsRefused(t *testing.T) {
	dir := inDir(t)
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	code, _, stderr := runCLI(t, "run", "redlock-clock-jump", "--events", fifo, "--force")
	if code != 2 || !strings.Contains(stderr, "locklab: --events: "+fifo+" is a named pipe (FIFO), not a regular file") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	assertStillKind(t, fifo, os.ModeNamedPipe)
}

// Issue 32, item 2: a command overwrote its own input, and two outputs
// naming one file kept only the last.
func TestOutputThatIsAnInputOrAnotherOutputIsRefused(t *testing.T) {
	dir := inDir(t)
	// A scenario file of our own, and other spellings of it.
	file := writeScenarioFile(t, dir)
	before, _ := os.ReadFile(file)
	os.Symlink("x.yaml", filepath.Join(dir, "link.yaml"))
	os.Link(file, filepath.Join(dir, "hard.yaml"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	for _, args := range [][]string{
		{"run", "x.yaml", "--events", "x.yaml", "--force"},
		{"run", "x.yaml", "--events", "./sub/../x.yaml", "--force"},
		{"run", "x.yaml", "--report", "link.yaml", "--force"},
		{"run", "link.yaml", "--report", "hard.yaml", "--force"},
		{"replay", "x.yaml", "--events", dir + "/x.yaml", "--force"},
		{"replay", "x.yaml", "--report", "x.yaml", "--force"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "is the same file as the input") {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
		if now, _ := os.ReadFile(file); string(now) != string(before) {
			t.Fatalf("%v replaced the scenario file", args)
		}
	}
	code, _, stderr := runCLI(t, "run", "x.yaml", "--events", "F", "--report", "F")
	if code != 2 || !strings.Contains(stderr, "locklab: --report and --events name the same file F; one would overwrite the other") || exists("F") {
		t.Fatalf("--events F --report F: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "run", "x.yaml", "--events", "sub/F", "--report", "sub/../sub/F")
	if code != 2 || !strings.Contains(stderr, "name the same file") {
		t.Fatalf("two spellings of one new file: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "run", "x.yaml", "--events", "nodir/F")
	if code != 2 || !strings.Contains(stderr, "--events: nodir/F: the directory") {
		t.Fatalf("missing directory: exit %d, %s", code, stderr)
	}
}

// writeScenarioFile writes a small violating scenario as dir/x.yaml.
func writeScenarioFile(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "x.yaml")
	text := "id: x\nalgorithm: set-nx-px-lua\nnodes: [A]\nttl: 2s\nclients: {count: 2, cycles: 1, work: 3s}\nduration: 10s\nexpect: {mutual_exclusion: violated}\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// failingWriter fails every write, like a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// Issue 32, item 5: a failed write lost the verdict and the witness. Now
// the outcome is printed first and stays; exit status 3 says a file was
// not written.
func TestFailedWriteKeepsTheFindingAndExitsThree(t *testing.T) {
	dir := inDir(t)
	writeScenarioFile(t, dir)
	// A report whose trace passes its budget is not written.
	for _, asJSON := range []bool{false, true} {
		args := []string{"run", "x.yaml", "--report", "r.html", "--max-report-bytes", "100"}
		if asJSON {
			args = append(args, "--json")
		}
		code, out, stderr := runCLI(t, args...)
		if code != exitWriteFailed || exists("r.html") || !strings.Contains(stderr, "--report: not written: the run's") || !strings.Contains(stderr, "exit status 3") {
			t.Fatalf("%v: exit %d, stderr %s", args, code, stderr)
		}
		if asJSON {
			var o runOutput
			if err := json.Unmarshal([]byte(out), &o); err != nil || o.Verdict.MutualExclusion != "violated" || len(o.Witness.Text) == 0 || o.Replay == "" {
				t.Fatalf("--json lost the finding: %v\n%s", err, out)
			}
		} else if !strings.Contains(out, "mutual exclusion  VIOLATED") || !strings.Contains(out, "Witness:") || !strings.Contains(out, "Replay: locklab run x.yaml --seed") {
			t.Fatalf("text lost the finding:\n%s", out)
		}
	}
	// Events to a stdout that fails: the summary (on stderr) stays.
	var errb strings.Builder
	code := run([]string{"run", "x.yaml", "--events", "-"}, failingWriter{}, &errb)
	if code != exitWriteFailed || !strings.Contains(errb.String(), "Witness:") || !strings.Contains(errb.String(), "locklab: --events: no space left on device") {
		t.Fatalf("--events - onto a failing stdout: exit %d, stderr %s", code, errb.String())
	}
	assertNoTempFiles(t, dir)
}

// Issue 32, item 6: replay --seed ran another seed and called it a match.
func TestReplayRefusesSeedAndRunLabelsAnotherSeed(t *testing.T) {
	dir := inDir(t)
	writeScenarioFile(t, dir)
	code, out, stderr := runCLI(t, "replay", "x.yaml", "--seed", "7")
	if code != 2 || out != "" || !strings.Contains(stderr, "locklab: --seed: replay reruns a file with the seed it carries") || !strings.Contains(stderr, "'locklab run x.yaml --seed 7'") {
		t.Fatalf("replay --seed: exit %d, %s", code, stderr)
	}
	exploreOnce(t, "--out", "cx")
	code, out, stderr = runCLI(t, "replay", "cx.yaml", "--json")
	var o runOutput
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil || o.DifferentRun != "" {
		t.Fatalf("replay: exit %d, %s\n%s", code, out, stderr)
	}
	other := o.Seed + 1
	_, out, _ = runCLI(t, "run", "cx.yaml", "--seed", strconv.FormatUint(other, 10))
	want := fmt.Sprintf("Note: seed %d is not the counterexample's seed %d: this is another run of the file's scenario, not a replay of the counterexample.", other, o.Seed)
	if !strings.Contains(out, want) {
		t.Fatalf("run cx.yaml --seed %d is not labelled a different run:\n%s", other, out)
	}
}

// Issue 32, item 8: course --out onto an existing file exited 1 after the
// first page failed; it is bad input, refused before anything runs.
func TestCourseOutOntoAFileExitsTwo(t *testing.T) {
	dir := inDir(t)
	os.WriteFile(filepath.Join(dir, "f"), []byte("keep"), 0o644)
	code, out, stderr := runCLI(t, "course", "--out", "f")
	if code != 2 || out != "" || stderr != "locklab: --out: f is a file, not a directory; expected a directory to write the course into (created if needed)\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "keep" {
		t.Fatal("the file was changed")
	}
}

// Issue 32, item 5 for explore: a counterexample that cannot be saved
// (here its temporary file vanishes before the rename) still prints the
// summary, text and --json, with the command that finds it again, and
// exits 3.
func TestExploreFailedSaveKeepsTheSummary(t *testing.T) {
	dir := inDir(t)
	beforeRename = func(tmp string) { os.Remove(tmp) }
	defer func() { beforeRename = nil }()
	code, out, stderr := runCLI(t, "explore", "redlock", "--faults", "clock", "--seed", "1", "--workers", "1", "--out", "cx", "--json")
	var o exploreOutput
	if code != exitWriteFailed || json.Unmarshal([]byte(out), &o) != nil || o.Counterexample == nil || o.Counterexample.File != "" ||
		!strings.HasPrefix(o.Counterexample.Replay, "locklab explore redlock --seed 1 --runs ") || len(o.Counterexample.Witness) == 0 {
		t.Fatalf("exit %d, stdout %s", code, out)
	}
	if !strings.Contains(stderr, "locklab: cannot save the counterexample: cannot write cx.yaml") || !strings.Contains(stderr, "exit status 3") {
		t.Fatalf("stderr: %s", stderr)
	}
	code, out, _ = runCLI(t, "explore", "redlock", "--faults", "clock", "--seed", "1", "--workers", "1", "--out", "cx")
	if code != exitWriteFailed || !strings.Contains(out, "Not saved (see the error below); find it again: locklab explore redlock --seed 1 --runs ") || !strings.Contains(out, "Witness:") {
		t.Fatalf("text: exit %d\n%s", code, out)
	}
	assertNoTempFiles(t, dir)
}
