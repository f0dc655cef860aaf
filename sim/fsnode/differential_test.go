//go:build linux

package fsnode

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The differential test runs the same stories of system calls against the
// model's kernel (Kernel over a Local FS) and against the Linux kernel the
// test runs on, in a temporary directory, and compares every answer. Each
// simulated process is a real process: the test binary re-executed as a
// helper (TestMain below) that runs the calls it reads on stdin, so the
// per-process rules (fcntl locks belong to the process, a process's exit
// releases its locks) are the kernel's own. It needs no server and runs
// everywhere Go runs on Linux, CI included.

// step is one system call of one process. Handles name descriptors ("a",
// "b"), since descriptor numbers differ between the helper and the model.
type step struct {
	proc string // "A", "B", "C"
	op   string // open, create, excl, dup, close, flock, unflock, fcntl, unfcntl, link, unlink, stat, exit
	arg  string // file name, or the handle dup copies
	arg2 string // link's new name
	fd   string // the handle the call works on or makes
}

// story is a sequence of steps and the rule it checks.
type story struct {
	name  string
	steps []step
}

var stories = []story{
	{"exclusive create", []step{
		{proc: "A", op: "excl", arg: "lock", fd: "a"},
		{proc: "B", op: "excl", arg: "lock", fd: "b"},
		{proc: "B", op: "create", arg: "lock", fd: "b"},
		{proc: "A", op: "unlink", arg: "lock"},
		{proc: "B", op: "excl", arg: "lock", fd: "c"},
	}},
	{"link and link count", []step{
		{proc: "A", op: "excl", arg: "tmpA", fd: "a"},
		{proc: "A", op: "stat", arg: "tmpA"},
		{proc: "A", op: "link", arg: "tmpA", arg2: "lock"},
		{proc: "A", op: "stat", arg: "tmpA"},
		{proc: "B", op: "excl", arg: "tmpB", fd: "b"},
		{proc: "B", op: "link", arg: "tmpB", arg2: "lock"},
		{proc: "B", op: "stat", arg: "tmpB"},
		{proc: "B", op: "unlink", arg: "tmpA"},
		{proc: "B", op: "stat", arg: "lock"},
	}},
	{"flock belongs to the open file description", []step{
		{proc: "A", op: "create", arg: "lock", fd: "a1"},
		{proc: "A", op: "open", arg: "lock", fd: "a2"},
		{proc: "A", op: "flock", fd: "a1"},
		{proc: "A", op: "flock", fd: "a2"}, // another description of the same process: blocked
		{proc: "B", op: "open", arg: "lock", fd: "b"},
		{proc: "B", op: "flock", fd: "b"},
		{proc: "A", op: "dup", arg: "a1", fd: "a3"},
		{proc: "A", op: "close", fd: "a1"},
		{proc: "B", op: "flock", fd: "b"}, // a3 still refers to the description
		{proc: "A", op: "close", fd: "a2"},
		{proc: "B", op: "flock", fd: "b"},
		{proc: "A", op: "close", fd: "a3"}, // the last descriptor: released
		{proc: "B", op: "flock", fd: "b"},
	}},
	{"fcntl belongs to the process and goes with any close", []step{
		{proc: "A", op: "create", arg: "lock", fd: "a1"},
		{proc: "A", op: "fcntl", fd: "a1"},
		{proc: "A", op: "open", arg: "lock", fd: "a2"},
		{proc: "A", op: "fcntl", fd: "a2"}, // the same process: granted
		{proc: "B", op: "create", arg: "lock", fd: "b"},
		{proc: "B", op: "fcntl", fd: "b"},
		{proc: "A", op: "close", fd: "a2"}, // closing the other descriptor drops the lock
		{proc: "B", op: "fcntl", fd: "b"},
		{proc: "A", op: "fcntl", fd: "a1"},
	}},
	{"flock and fcntl do not interact locally", []step{
		{proc: "A", op: "create", arg: "lock", fd: "a"},
		{proc: "A", op: "flock", fd: "a"},
		{proc: "B", op: "create", arg: "lock", fd: "b"},
		{proc: "B", op: "fcntl", fd: "b"},
		{proc: "B", op: "flock", fd: "b"},
		{proc: "B", op: "unfcntl", fd: "b"},
		{proc: "A", op: "unflock", fd: "a"},
		{proc: "B", op: "flock", fd: "b"},
	}},
	{"exit releases flock and fcntl locks", []step{
		{proc: "A", op: "create", arg: "f", fd: "a1"},
		{proc: "A", op: "flock", fd: "a1"},
		{proc: "A", op: "create", arg: "p", fd: "a2"},
		{proc: "A", op: "fcntl", fd: "a2"},
		{proc: "B", op: "create", arg: "f", fd: "b1"},
		{proc: "B", op: "create", arg: "p", fd: "b2"},
		{proc: "B", op: "flock", fd: "b1"},
		{proc: "B", op: "fcntl", fd: "b2"},
		{proc: "A", op: "exit"},
		{proc: "B", op: "flock", fd: "b1"},
		{proc: "B", op: "fcntl", fd: "b2"},
		{proc: "C", op: "excl", arg: "f", fd: "c"}, // the file stays: only locks go
	}},
}

// errno names an answer the way both sides print it.
func errno(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, syscall.EEXIST), errors.Is(err, ErrExist):
		return "EEXIST"
	case errors.Is(err, syscall.ENOENT), errors.Is(err, ErrNotExist):
		return "ENOENT"
	case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES), errors.Is(err, ErrWouldBlock):
		return "EWOULDBLOCK"
	case errors.Is(err, syscall.EBADF), errors.Is(err, ErrBadFD):
		return "EBADF"
	}
	return err.Error()
}

// modelAnswers runs a story on the model's kernel.
func modelAnswers(s story, mutant string) []string {
	fs := NewFS()
	fs.mutant = mutant
	k := NewKernel("host", Local{FS: fs}, false)
	k.mutant = mutant
	pids := map[string]int{"A": 101, "B": 102, "C": 103}
	fds := map[string]int{}
	var out []string
	for _, st := range s.steps {
		pid := pids[st.proc]
		k.Start(pid)
		var err error
		ans := ""
		switch st.op {
		case "open", "create", "excl":
			var fd int
			fd, err = k.Open(pid, st.arg, st.op != "open", st.op == "excl")
			if err == nil {
				fds[st.fd] = fd
			}
		case "dup":
			var fd int
			if fd, err = k.Dup(pid, fds[st.arg]); err == nil {
				fds[st.fd] = fd
			}
		case "close":
			err = k.Close(pid, fds[st.fd])
		case "flock":
			err = k.Flock(pid, fds[st.fd], true)
		case "unflock":
			err = k.Unflock(pid, fds[st.fd])
		case "fcntl":
			err = k.Fcntl(pid, fds[st.fd], true)
		case "unfcntl":
			err = k.Unfcntl(pid, fds[st.fd])
		case "link":
			err = k.Link(st.arg, st.arg2)
		case "unlink":
			err = k.Unlink(st.arg)
		case "stat":
			var sb Stat
			if sb, err = k.Stat(st.arg); err == nil {
				ans = fmt.Sprintf("nlink=%d", sb.Nlink)
			}
		case "exit":
			k.Exit(pid)
		}
		if ans == "" {
			ans = errno(err)
		}
		out = append(out, ans)
	}
	return out
}

// helper is one real process running steps.
type helper struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// realAnswers runs a story against the real kernel in dir.
func realAnswers(t *testing.T, s story, dir string) []string {
	t.Helper()
	procs := map[string]*helper{}
	defer func() {
		for _, h := range procs {
			_ = h.in.Close()
			_ = h.cmd.Wait()
		}
	}()
	start := func(name string) *helper {
		if h := procs[name]; h != nil {
			return h
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "LOCKLAB_FS_HELPER="+dir)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		h := &helper{cmd: cmd, in: in, out: bufio.NewReader(stdout)}
		procs[name] = h
		return h
	}
	var out []string
	for _, st := range s.steps {
		h := start(st.proc)
		if st.op == "exit" {
			_ = h.in.Close()
			if err := h.cmd.Wait(); err != nil {
				t.Fatalf("helper %s: %v", st.proc, err)
			}
			delete(procs, st.proc)
			out = append(out, "ok")
			continue
		}
		fmt.Fprintf(h.in, "%s %s %s %s\n", st.op, orDash(st.arg), orDash(st.arg2), orDash(st.fd))
		line, err := h.out.ReadString('\n')
		if err != nil {
			t.Fatalf("helper %s: %v", st.proc, err)
		}
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// TestMain turns the test binary into a helper process when asked.
func TestMain(m *testing.M) {
	if dir := os.Getenv("LOCKLAB_FS_HELPER"); dir != "" {
		runHelper(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runHelper answers steps read from stdin with the real system calls.
func runHelper(dir string) {
	fds := map[string]int{}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		op, arg, arg2, name := f[0], filepath.Join(dir, f[1]), filepath.Join(dir, f[2]), f[3]
		var err error
		ans := ""
		switch op {
		case "open", "create", "excl":
			flags := syscall.O_RDWR | syscall.O_CLOEXEC
			if op != "open" {
				flags |= syscall.O_CREAT
			}
			if op == "excl" {
				flags |= syscall.O_EXCL
			}
			var fd int
			if fd, err = syscall.Open(arg, flags, 0o644); err == nil {
				fds[name] = fd
			}
		case "dup":
			var fd int
			if fd, err = syscall.Dup(fds[f[1]]); err == nil {
				fds[name] = fd
			}
		case "close":
			err = syscall.Close(fds[name])
		case "flock":
			err = syscall.Flock(fds[name], syscall.LOCK_EX|syscall.LOCK_NB)
		case "unflock":
			err = syscall.Flock(fds[name], syscall.LOCK_UN)
		case "fcntl", "unfcntl":
			typ := int16(syscall.F_WRLCK)
			if op == "unfcntl" {
				typ = syscall.F_UNLCK
			}
			err = syscall.FcntlFlock(uintptr(fds[name]), syscall.F_SETLK, &syscall.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 0})
		case "link":
			err = syscall.Link(arg, arg2)
		case "unlink":
			err = syscall.Unlink(arg)
		case "stat":
			var sb syscall.Stat_t
			if err = syscall.Stat(arg, &sb); err == nil {
				ans = "nlink=" + strconv.FormatUint(uint64(sb.Nlink), 10)
			}
		}
		if ans == "" {
			ans = errno(err)
		}
		fmt.Println(ans)
	}
}

// linuxAnswers are the real kernel's answers, story by story, taken once
// for both tests: each story starts a few processes, which under -race is
// the slow part.
var linuxAnswers = map[string][]string{}

func linux(t *testing.T, s story) []string {
	t.Helper()
	if a, ok := linuxAnswers[s.name]; ok {
		return a
	}
	a := realAnswers(t, s, t.TempDir())
	if !t.Failed() {
		linuxAnswers[s.name] = a
	}
	return a
}

// TestDifferentialLocalSemantics compares the model with the real kernel,
// story by story, answer by answer.
func TestDifferentialLocalSemantics(t *testing.T) {
	for _, s := range stories {
		t.Run(s.name, func(t *testing.T) {
			got, want := modelAnswers(s, ""), linux(t, s)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("step %d %+v: model says %s, Linux says %s", i+1, s.steps[i], got[i], want[i])
				}
			}
		})
	}
}

// TestDifferentialCatchesBrokenRules breaks each modelled rule in turn and
// requires the real kernel to disagree on some story: the comparison is
// sharp enough to notice any of them.
func TestDifferentialCatchesBrokenRules(t *testing.T) {
	real := map[string][]string{}
	for _, s := range stories {
		real[s.name] = linux(t, s)
	}
	for _, mutant := range []string{"excl-ignored", "link-count-fixed", "flock-fcntl-interact", "flock-per-process", "fcntl-close-keeps", "exit-keeps"} {
		caught := ""
		for _, s := range stories {
			if strings.Join(modelAnswers(s, mutant), " ") != strings.Join(real[s.name], " ") {
				caught = s.name
				break
			}
		}
		if caught == "" {
			t.Errorf("mutant %s: every story agrees with Linux; the differential test cannot see this rule", mutant)
		} else {
			t.Logf("mutant %s: caught by %q", mutant, caught)
		}
	}
}
