package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/matrix"
)

// inDir runs the test in a fresh temporary working directory.
func inDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

func TestBadFileAllErrorsOneLineEachExitTwo(t *testing.T) {
	dir := inDir(t)
	bad := "id: x\nalgorithm: set-nx-px-lua\nttl: 2000000h\nnodes: [A, {name: B, replica_of: c1}]\nclients: {count: 2.5}\n"
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644)
	code, out, stderr := runCLI(t, "run", "bad.yaml")
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	want := "locklab: bad.yaml:3:6: ttl: expected a duration between 1ms and 24h, found \"2000000h\"\n" +
		"locklab: bad.yaml:5:18: clients.count: expected a whole number, found \"2.5\"\n"
	if stderr != want {
		t.Fatalf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	// Fixing the shape reveals the meaning errors: the replica naming a
	// client (a SIGSEGV before) is one of them.
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(strings.NewReplacer("2000000h", "2s", "2.5", "2").Replace(bad)), 0o644)
	code, _, stderr = runCLI(t, "run", "bad.yaml")
	if code != 2 || stderr != "locklab: bad.yaml:4:34: nodes[1].replica_of: expected the name of another Redis node (A), found \"c1\"\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestLimitsAndFlagsToRaiseThem(t *testing.T) {
	dir := inDir(t)
	code, _, stderr := runCLI(t, "run", "/dev/zero")
	if code != 2 || !strings.Contains(stderr, "locklab: /dev/zero: expected a scenario file of at most 1048576 bytes (the limit; raise it with --max-file-size), found more") {
		t.Fatalf("/dev/zero: exit %d, %s", code, stderr)
	}
	// Issue 25: 2^63-1 wrapped to "empty file".
	code, _, stderr = runCLI(t, "run", "redlock-clock-jump", "--max-file-size", "9223372036854775807")
	if code != 2 || !strings.Contains(stderr, "--max-file-size: expected a limit between 1 and 1073741824 bytes (1 GiB), found 9223372036854775807") {
		t.Fatalf("--max-file-size 2^63-1: exit %d, %s", code, stderr)
	}
	sc := "id: many\nalgorithm: set-nx-px-lua\nttl: 1s\nnodes: [A]\nclients: {count: 2000, cycles: 1}\nduration: 2s\n"
	os.WriteFile(filepath.Join(dir, "many.yaml"), []byte(sc), 0o644)
	code, _, stderr = runCLI(t, "run", "many.yaml")
	if code != 2 || !strings.Contains(stderr, "clients.count: expected between 1 and 1000 clients (the limit; raise it with --max-clients), found 2000") {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if code, _, stderr = runCLI(t, "run", "many.yaml", "--max-clients", "2000", "--json"); code != 0 {
		t.Fatalf("raised limit: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "matrix", "--seeds", "2000000000")
	if code != 2 || !strings.Contains(stderr, "--seeds: expected at most 1000000 runs per cell (the limit; raise it with --max-seeds), found 2000000000") {
		t.Fatalf("matrix seeds: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "explore", "redlock", "--runs", "20000000000")
	if code != 2 || !strings.Contains(stderr, "--runs: expected at most 10000000 runs (the limit; raise it with --max-runs)") {
		t.Fatalf("explore runs: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "explore", "redlock", "--workers", "1000000000")
	if code != 2 || !strings.Contains(stderr, "--workers: expected a number between 1 and 1024") {
		t.Fatalf("explore workers: exit %d, %s", code, stderr)
	}
}

func TestWarningsForFaultsThatNeverFire(t *testing.T) {
	dir := inDir(t)
	sc := `id: quiet
algorithm: set-nx-px-lua
ttl: 1s
nodes: [A]
clients: {count: 2, cycles: 1}
duration: 5s
faults:
  - {kind: pause, target: c1, at: 9s, duration: 1s}
  - {kind: crash, target: c2, after: {client: c2, op: CREATE}}
  - {kind: drop, op: SETNX}
`
	os.WriteFile(filepath.Join(dir, "quiet.yaml"), []byte(sc), 0o644)
	code, out, stderr := runCLI(t, "run", "quiet.yaml", "--json")
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	for _, want := range []string{
		"locklab: warning: quiet.yaml:8:35: faults[0].at: this pause fault can never fire: 9s is not before the end of the run (duration 5s)",
		"locklab: warning: faults[1] (crash) never fired: no message matched its trigger (on CREATE reply of c2)",
		"locklab: warning: faults[2] (drop) matched no message: drop messages of SETNX",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	var got struct{ Warnings []string }
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Warnings) != 3 {
		t.Fatalf("json warnings %v (%v)", got.Warnings, err)
	}
}

func TestReportToStdoutAndControlCharacters(t *testing.T) {
	dir := inDir(t)
	sc := "id: \"evil\\e]0;pwned\\a\"\ntitle: \"red \\e[31mtext\"\nalgorithm: set-nx-px-lua\nttl: 1s\nnodes: [A]\nclients: {count: 1, cycles: 1}\nduration: 2s\n"
	os.WriteFile(filepath.Join(dir, "evil.yaml"), []byte(sc), 0o644)
	code, out, stderr := runCLI(t, "run", "evil.yaml", "--report", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.HasSuffix(strings.TrimSpace(out), "</html>") {
		t.Fatalf("stdout is not one HTML page: %.80q", out)
	}
	if !strings.Contains(stderr, "evil]0;pwned — red [31mtext") {
		t.Fatalf("summary not on stderr: %s", stderr)
	}
	if strings.ContainsAny(stderr, "\x1b\x07") {
		t.Fatalf("control characters reach the terminal: %q", stderr)
	}
	if code, _, _ := runCLI(t, "run", "evil.yaml", "--report", "-", "--json"); code != 2 {
		t.Fatalf("--report - --json: exit %d", code)
	}
	// An existing report is only replaced with --force.
	os.WriteFile(filepath.Join(dir, "r.html"), []byte("keep"), 0o644)
	if code, _, stderr := runCLI(t, "run", "evil.yaml", "--report", "r.html"); code != 2 || !strings.Contains(stderr, "r.html exists; pass --force") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "run", "evil.yaml", "--report", "r.html", "--force"); code != 0 {
		t.Fatalf("--force: exit %d", code)
	}
}

// exploreOnce finds and saves the redlock clock counterexample.
func exploreOnce(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, out, stderr := runCLI(t, append([]string{"explore", "redlock", "--faults", "clock", "--seed", "1", "--workers", "1"}, args...)...)
	if code != 1 {
		t.Fatalf("explore: exit %d\n%s\n%s", code, out, stderr)
	}
	return out, stderr
}

func TestExploreOutputNamesNeverCollide(t *testing.T) {
	dir := inDir(t)
	out, _ := exploreOnce(t, "--out", "cx")
	if !strings.Contains(out, "Saved: cx.yaml\nReplay: locklab replay cx.yaml") || !strings.Contains(out, "Report: cx.html") {
		t.Fatalf("names:\n%s", out)
	}
	// The printed replay command works as printed.
	if code, _, stderr := runCLI(t, "replay", "cx.yaml"); code != 0 {
		t.Fatalf("replay: exit %d %s", code, stderr)
	}
	// --out cx.html cannot overwrite the counterexample with the report.
	out, _ = exploreOnce(t, "--out", "cx.html")
	if !strings.Contains(out, "Saved: cx.html.yaml") || !strings.Contains(out, "Report: cx.html.html") {
		t.Fatalf("names:\n%s", out)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "cx.html.yaml"))
	if !bytes.Contains(data, []byte("counterexample:\n  format: 1")) {
		t.Fatalf("cx.html.yaml is not a counterexample:\n%.200s", data)
	}
	if code, _, stderr := runCLI(t, "explore", "redlock", "--out", "a.yaml", "--report", "./a.yaml"); code != 2 || !strings.Contains(stderr, "--report and --out name the same file") {
		t.Fatalf("same file: exit %d %s", code, stderr)
	}
	// The same file through a symlink, a parent directory or a hard
	// link is refused too, existing or not (issue 25: only textually
	// equal paths were).
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.Symlink("cx.yaml", filepath.Join(dir, "link.yaml"))
	os.Symlink(".", filepath.Join(dir, "here"))
	os.Link(filepath.Join(dir, "cx.yaml"), filepath.Join(dir, "hard.yaml"))
	for _, c := range [][2]string{{"new.yaml", "sub/../new.yaml"}, {"new.yaml", "here/new.yaml"}, {"cx.yaml", "link.yaml"}, {"hard.yaml", "cx.yaml"}} {
		if code, _, stderr := runCLI(t, "explore", "redlock", "--force", "--out", c[0], "--report", c[1]); code != 2 || !strings.Contains(stderr, "--report and --out name the same file") {
			t.Errorf("--out %s --report %s: exit %d %s", c[0], c[1], code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "explore", "redlock", "--out", "cx.yaml"); code != 2 || !strings.Contains(stderr, "--out: cx.yaml exists; pass --force") {
		t.Fatalf("existing: exit %d %s", code, stderr)
	}
	exploreOnce(t, "--out", "cx.yaml", "--force")
	// Default names: taken ones get -2, -3.
	out, _ = exploreOnce(t)
	if !strings.Contains(out, "Saved: locklab-counterexample-redlock-1.yaml") {
		t.Fatalf("default name:\n%s", out)
	}
	out, _ = exploreOnce(t)
	if !strings.Contains(out, "Saved: locklab-counterexample-redlock-1-2.yaml") || !strings.Contains(out, "Report: locklab-counterexample-redlock-1-2.html") {
		t.Fatalf("second default name:\n%s", out)
	}
}

func TestCounterexampleTamperIsAnError(t *testing.T) {
	dir := inDir(t)
	exploreOnce(t, "--out", "cx.yaml")
	orig, err := os.ReadFile(filepath.Join(dir, "cx.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(orig)
	cut := func(s, from string) string { return s[:strings.LastIndex(s, from)] }
	cases := []struct {
		name, data string
		code       int
		want       string
	}{
		{"expect cut off", cut(text, "expect:"), 2, "the counterexample expects {mutual_exclusion: violated}, but the file's expect is nothing (cut short or edited?)"},
		{"cut in the middle", text[:len(text)/2], 2, ""},
		{"seed edited", editSeed(t, text), 2, "seed: the counterexample was found with seed"},
		{"fault edited", strings.Replace(text, "jump: ", "jump: 1", 1), 2, "counterexample.scenario_sha256: the scenario's digest is"},
		{"property edited", strings.Replace(text, "property: mutual_exclusion", "property: liveness", 1), 2, "counterexample.property: the counterexample reproduces a violation of liveness, but its expect for liveness is nothing (edited?)"},
		{"property misspelt", strings.Replace(text, "property: mutual_exclusion", "property: mutual_exclusio", 1), 2, "counterexample.property: expected one of mutual_exclusion, resource, liveness, found \"mutual_exclusio\" (did you mean mutual_exclusion?)"},
		{"newer format", strings.Replace(text, "format: 1", "format: 2", 1), 2, "counterexample.format: expected format 1 (this locklab's), found 2"},
		{"digest edited", strings.Replace(text, "trace_sha256: ", "trace_sha256: 0", 1)[:0] + editDigest(text), 1, "the replay's trace digest is"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(c.data), 0o644)
			code, _, stderr := runCLI(t, "replay", "t.yaml")
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant %q", code, c.code, stderr, c.want)
			}
		})
	}
	if code, _, stderr := runCLI(t, "replay", "cx.yaml"); code != 0 {
		t.Fatalf("the untouched file: exit %d %s", code, stderr)
	}
}

// editDigest changes the first hex digit of the recorded trace digest.
func editDigest(text string) string {
	i := strings.Index(text, "trace_sha256: ") + len("trace_sha256: ")
	d := byte('0')
	if text[i] == '0' {
		d = '1'
	}
	return text[:i] + string(d) + text[i+1:]
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the CLI that locklabBinary built, so the suite leaves
// nothing behind in the temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// locklabBinary builds the CLI once, for tests that send it real signals.
func locklabBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "locklab-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "locklab")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = &buildFailure{string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return binPath
}

type buildFailure struct{ out string }

func (b *buildFailure) Error() string { return b.out }

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// interrupted starts the CLI, waits until it is busy (its stderr shows
// marker, or 1.5s pass for commands that print nothing while they work),
// sends sig (twice: a second Ctrl-C), and returns the exit status and
// output. The deadline only guards against a hang; no assertion depends on
// how fast the machine is.
func interrupted(t *testing.T, dir, marker string, sig syscall.Signal, twice bool, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(locklabBinary(t), args...)
	cmd.Dir = dir
	var out, errb lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if marker == "" {
		time.Sleep(1500 * time.Millisecond)
	} else {
		for !strings.Contains(errb.String(), marker) {
			select {
			case <-done:
				t.Fatalf("%v ended before %q appeared:\n%s", args, marker, errb.String())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	cmd.Process.Signal(sig)
	if twice {
		cmd.Process.Signal(sig)
	}
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%v did not stop after %v", args, sig)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func TestInterruptExploreKeepsWhatWasFound(t *testing.T) {
	dir := t.TempDir()
	// --all goes on after the first violation, so the run is long enough
	// to be interrupted.
	code, out, stderr := interrupted(t, dir, "", syscall.SIGINT, false, "explore", "redlock", "--faults", "clock", "--all", "--runs", "10000000", "--workers", "1", "--out", "cx.yaml")
	if code != 130 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "locklab: interrupted: explore stops") || !strings.Contains(out, "interrupted after ") || !strings.Contains(out, "Replay: locklab replay cx.yaml") {
		t.Fatalf("summary missing:\n%s\n%s", out, stderr)
	}
	if code, _, stderr := runCLIIn(t, dir, "replay", "cx.yaml"); code != 0 {
		t.Fatalf("the saved counterexample does not replay: exit %d %s", code, stderr)
	}
	assertNoTempFiles(t, dir)
}

func TestInterruptMatrixPrintsTheTableSoFar(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := interrupted(t, dir, "", syscall.SIGTERM, false, "matrix", "--seeds", "1000000", "--algorithms", "set-nx-px-lua", "--classes", "pause", "--workers", "1", "--examples", "ex")
	if code != 143 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "interrupted: the table covers the ") || !strings.Contains(out, "Mutual exclusion violated") {
		t.Fatalf("table missing:\n%s", out)
	}
	assertNoTempFiles(t, filepath.Join(dir, "ex"))
	// A second signal quits at once, still with the signal's status.
	code, _, _ = interrupted(t, dir, "", syscall.SIGINT, true, "matrix", "--seeds", "1000000", "--algorithms", "set-nx-px-lua", "--classes", "pause", "--workers", "1")
	if code != 130 {
		t.Fatalf("second signal: exit %d", code)
	}
}

func TestInterruptCourseLeavesWholePages(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := interrupted(t, dir, "course: [1/", syscall.SIGINT, false, "course", "--out", "c")
	if code != 130 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "c", "*.html"))
	if len(pages) < 2 {
		t.Fatalf("pages written: %v; want the first lesson and the index", pages)
	}
	index, _ := os.ReadFile(filepath.Join(dir, "c", "index.html"))
	if !bytes.Contains(index, []byte("not run: interrupted")) {
		t.Errorf("the index does not say which lessons were not run")
	}
	for _, p := range pages {
		b, _ := os.ReadFile(p)
		if !bytes.HasSuffix(bytes.TrimSpace(b), []byte("</html>")) {
			t.Errorf("%s is not a whole page", p)
		}
	}
	assertNoTempFiles(t, filepath.Join(dir, "c"))
}

func runCLIIn(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	t.Chdir(dir)
	return runCLI(t, args...)
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if len(tmp) > 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

// Issue 25: output paths are compared by the file they name, never by
// spelling; directories and - are refused as --out; the finding is on
// stderr before any file is written, so a failed write loses nothing.
func TestExploreOutputPathsByFileAndFindingFirst(t *testing.T) {
	dir := inDir(t)
	os.Mkdir(filepath.Join(dir, "adir"), 0o755)
	os.Symlink(filepath.Join(dir, "same.yaml"), filepath.Join(dir, "link.html"))
	os.Symlink(dir, filepath.Join(dir, "here"))
	refused := []struct {
		args []string
		want string
	}{
		{[]string{"--out", "same.yaml", "--report", "./same.yaml"}, "--report and --out name the same file"},
		{[]string{"--out", "same.yaml", "--report", "here/same.yaml"}, "--report and --out name the same file"},
		{[]string{"--out", "same.yaml", "--report", "link.html"}, "--report and --out name the same file"},
		{[]string{"--out", "adir/"}, `--out: expected a file name such as cx.yaml, found "adir/"`},
		{[]string{"--out", "adir"}, `--out: expected a file name such as cx.yaml, found "adir"`},
		{[]string{"--out", "-"}, `--out: expected a file name such as cx.yaml, found "-"`},
		{[]string{"--out", "cx.yaml", "--report", "adir"}, "--report: adir is a directory"},
	}
	for _, c := range refused {
		code, _, stderr := runCLI(t, append([]string{"explore", "redlock", "--faults", "clock", "--seed", "1"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.yaml")); len(m) > 0 {
		t.Fatalf("files written by refused commands: %v", m)
	}
	// --force onto a directory: the write fails, the finding is printed.
	os.Mkdir(filepath.Join(dir, "taken.yaml"), 0o755)
	code, _, stderr := runCLI(t, "explore", "redlock", "--faults", "clock", "--seed", "1", "--workers", "1", "--out", "taken", "--force")
	if code != 2 {
		t.Errorf("--force onto a directory: exit %d, want 2\n%s", code, stderr)
	}
	if code == 2 && !strings.Contains(stderr, "taken.yaml is a directory") {
		t.Errorf("--force onto a directory: stderr %q", stderr)
	}
	// An unwritable place (its "directory" is a file, which fails even
	// for root) is refused before the exploration runs (issue 32: every
	// output path is checked first).
	{
		os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644)
		code, out, stderr := runCLI(t, "explore", "redlock", "--faults", "clock", "--seed", "1", "--workers", "1", "--out", "afile/cx.yaml")
		if code != 2 || out != "" || stderr != "locklab: --out: afile/cx.yaml: afile is not a directory; name a file in an existing directory\n" {
			t.Errorf("unwritable --out: exit %d, stderr:\n%s", code, stderr)
		}
	}
}

// Issue 25: matrix refuses to replace an existing --report without
// --force, and --report - is the heatmap on stdout (the table on stderr).
func TestMatrixReportForceAndStdout(t *testing.T) {
	dir := inDir(t)
	small := []string{"matrix", "--seeds", "2", "--algorithms", "set-nx-px-lua", "--classes", "pause", "--workers", "1"}
	os.WriteFile(filepath.Join(dir, "m.html"), []byte("mine"), 0o644)
	code, _, stderr := runCLI(t, append(small, "--report", "m.html")...)
	if code != 2 || !strings.Contains(stderr, "--report: m.html exists; pass --force to replace it") {
		t.Fatalf("existing report: exit %d %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "m.html")); string(b) != "mine" {
		t.Fatalf("the existing report was replaced: %.60q", b)
	}
	if code, _, stderr = runCLI(t, append(small, "--report", "m.html", "--force")...); code != 0 {
		t.Fatalf("--force: exit %d %s", code, stderr)
	}
	code, out, stderr := runCLI(t, append(small, "--report", "-")...)
	if code != 0 || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(stderr, "set-nx-px-lua") {
		t.Fatalf("--report -: exit %d, stdout %.80q, stderr %.200q", code, out, stderr)
	}
	if exists(filepath.Join(dir, "-")) {
		t.Fatal("--report - wrote a file named -")
	}
	if code, _, stderr = runCLI(t, append(small, "--report", "-", "--json")...); code != 2 || !strings.Contains(stderr, "both want stdout") {
		t.Fatalf("--report - --json: exit %d %s", code, stderr)
	}
}

// Issue 25: limit flags are bounded, so a huge one is refused instead of
// wrapping around (--max-file-size 9223372036854775807 read every file as
// empty).
func TestLimitFlagsRefuseOverflow(t *testing.T) {
	dir := inDir(t)
	os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("id: x\nalgorithm: set-nx-px-lua\nttl: 10s\nnodes: [A]\nclients: {count: 1, cycles: 1}\n"), 0o644)
	code, _, stderr := runCLI(t, "run", "s.yaml", "--max-file-size", "9223372036854775807")
	if code != 2 || !strings.Contains(stderr, "--max-file-size: expected a limit between 1 and 1073741824 bytes (1 GiB), found 9223372036854775807") {
		t.Fatalf("exit %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "run", "s.yaml", "--max-file-size", "1073741824"); code != 0 {
		t.Fatalf("the largest accepted limit: exit %d %s", code, stderr)
	}
}

// Issue 25: the text summary strips control characters everywhere, also
// on lines that print scenario text without term (the header's node list).
func TestRunHeaderStripsControlCharacters(t *testing.T) {
	dir := inDir(t)
	os.WriteFile(filepath.Join(dir, "esc.yaml"), []byte("id: esc\nalgorithm: set-nx-px-lua\nttl: 10s\nnodes: [\"A\\x1b[31mred\"]\nclients: {count: 1, cycles: 1}\n"), 0o644)
	code, out, stderr := runCLI(t, "run", "esc.yaml")
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	if strings.ContainsAny(out+stderr, "\x1b\x07\x9b") {
		t.Fatalf("a control character reaches the terminal:\n%q", out)
	}
	if !strings.Contains(out, "nodes A[31mred") {
		t.Fatalf("header:\n%s", out)
	}
}

// Issue 25: an interrupted matrix shows the cells it never reached as
// "not run", not "err" (which means runs that failed).
func TestMatrixShowsNeverRunCellsAsNotRun(t *testing.T) {
	res := &matrix.Result{Seeds: 10, Classes: []faults.Class{"pause", "crash"}, Algorithms: []string{"set-nx-px-lua"}, Interrupted: true,
		Cells: []matrix.Cell{
			{Algorithm: "set-nx-px-lua", Class: "pause", Applicable: true, Runs: 3},
			{Algorithm: "set-nx-px-lua", Class: "crash", Applicable: true, Runs: 0},
		}}
	var b bytes.Buffer
	printMatrix(&b, res, nil)
	rows := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "  set-nx-px-lua") {
			rows++
			if strings.Contains(line, "err") || !strings.HasSuffix(line, "not run") {
				t.Errorf("row %q: the never-run crash cell is not shown as not run", line)
			}
		}
	}
	if rows != 3 || !strings.Contains(b.String(), "not run: the matrix was interrupted") {
		t.Fatalf("table:\n%s", b.String())
	}
}

// Issue 25: a temporary file left by a writer killed mid-write (kill -9, a
// second Ctrl-C) is removed by the next write of the same file; one of a
// running process is left alone.
func TestWriteAtomicRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".cx.yaml.tmp-2147483646-123")
	live := filepath.Join(dir, fmt.Sprintf(".cx.yaml.tmp-%d-456", os.Getpid()))
	other := filepath.Join(dir, ".other.yaml.tmp-2147483646-789")
	for _, p := range []string{stale, live, other} {
		os.WriteFile(p, []byte("half"), 0o644)
	}
	if err := writeFileAtomic(filepath.Join(dir, "cx.yaml"), []byte("whole")); err != nil {
		t.Fatal(err)
	}
	if exists(stale) {
		t.Error("the dead writer's temporary file is still there")
	}
	if !exists(live) || !exists(other) {
		t.Error("a running writer's or another file's temporary file was removed")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cx.yaml")); string(b) != "whole" {
		t.Errorf("cx.yaml = %q", b)
	}
}

// editSeed changes the counterexample's seed to another valid one. (It
// used to put a 1 in front, which past 1844... made a number no uint64
// holds, and the replay then refused the number rather than the edit.)
func editSeed(t *testing.T, text string) string {
	t.Helper()
	at := strings.Index(text, "\nseed: ")
	if at < 0 {
		t.Fatalf("no seed line in the counterexample:\n%s", text)
	}
	start := at + len("\nseed: ")
	end := start + strings.IndexByte(text[start:], '\n')
	seed, err := strconv.ParseUint(text[start:end], 10, 64)
	if err != nil {
		t.Fatalf("seed %q: %v", text[start:end], err)
	}
	return text[:start] + strconv.FormatUint(seed^1, 10) + text[end:]
}
