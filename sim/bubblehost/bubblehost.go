// Package bubblehost runs testing/synctest bubbles in an ordinary program,
// so that the locklab command line can run real client libraries (the
// go-zookeeper client, redsync) as deterministically as `go test` does.
//
// Why: a real client library starts goroutines, arms timers and reads
// time.Now. locklab makes such code deterministic by running it inside a
// synctest bubble, where time is virtual and synctest.Wait says when every
// goroutine is durably blocked (sim/bubble.go, sim/zk/ensemble). The only
// exported way into a bubble is synctest.Test, and it takes a *testing.T —
// one that the testing package created for a running test. A program built
// with `go build` has none.
//
// How: Main starts the testing package the way a `go test` binary's
// generated main does, through testing.MainStart with this package's own
// implementation of testing's (unexported) test-deps interface, and one
// internal test. That test's body runs the program's real main, which may
// call Run any number of times (each Run is synctest.Test on the hosting
// test's *testing.T), and then calls os.Exit with main's status — before
// the testing package could print "PASS" or "FAIL" on standard output.
// os.Args is cut to the program name while testing parses its flags, so the
// program's own flags never reach testing's flag.Parse, and restored before
// the program runs. Tests use Bind instead, with their own *testing.T.
//
// What stays clean: a panic inside fn comes back from Run as a *PanicError;
// a deadlocked bubble (every goroutine durably blocked, or goroutines left
// blocked after fn returned) comes back as a *DeadlockError naming what
// they wait on; a panic in the program's main outside any bubble is printed
// on standard error with its stack and exits with status 2, like an
// uncaught panic in a plain program. Nothing of testing's own chatter
// ("--- FAIL", "PASS") ever reaches standard output, so a JSON report on
// stdout stays parseable. A panic in some other goroutine kills the process
// as it would in any Go program (the runtime prints it on standard error,
// exit status 2). The testing package installs no signal handlers outside
// fuzzing, so a program's own SIGINT/SIGTERM handling is untouched.
//
// The price: testing.MainStart "is not meant to be called directly and is
// not subject to the Go 1 compatibility document". The module's go.mod
// names the Go version this was written and checked against (go 1.26.8).
// When a newer toolchain changes the interface, this package stops
// compiling (the deps type no longer satisfies MainStart's parameter, and
// the compiler names the method); when it changes behaviour (say, testing
// starts printing on stdout, or wants a flag), TestHostedProgram notices: it
// builds the small program in testdata/hostprog with `go build` and checks
// that a bubble runs in it, twice in a row, with virtual time, and that its
// failures reach stderr and the exit status, never stdout.
package bubblehost

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// ErrNoHost is what Run returns when no *testing.T can host a bubble: the
// program's main did not go through Main, and no test called Bind.
var ErrNoHost = errors.New("bubblehost: no host for a synctest bubble: a program must call bubblehost.Main(realMain) from func main, and a test must call bubblehost.Bind(t) before Run")

// PanicError is a panic inside the bubble's function, recovered there.
type PanicError struct {
	Value any    // what fn panicked with
	Stack []byte // the panicking goroutine's stack, from debug.Stack
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic inside the synctest bubble: %v\n\n%s", e.Value, strings.TrimRight(string(e.Stack), "\n"))
}

// DeadlockError is synctest's deadlock: every goroutine of the bubble was
// durably blocked with no timer left to fire, or fn returned while some of
// its goroutines stayed blocked (synctest.Test waits for all of them).
// Those goroutines stay blocked for the life of the process; the next Run
// starts a fresh bubble.
type DeadlockError struct {
	Reason  string   // the runtime's words, e.g. "deadlock: all goroutines in bubble are blocked"
	Blocked []string // one line per blocked goroutine of the bubble: its state and where it waits
}

func (e *DeadlockError) Error() string {
	if len(e.Blocked) == 0 {
		return "synctest bubble: " + e.Reason
	}
	return "synctest bubble: " + e.Reason + ":\n  " + strings.Join(e.Blocked, "\n  ")
}

var (
	// mu guards hosts. Runs hold it for reading, so bubbles run side by
	// side (explore's workers): each synctest.Test makes a sub-test of
	// the shared hosting *testing.T, which testing allows from several
	// goroutines as it allows t.Run; a bubble shares nothing with another
	// but crypto/rand, which RunSeeded routes per bubble (random.go).
	// Bind's cleanup takes it for writing, so it waits for the runs that
	// use its t.
	mu sync.RWMutex
	// hosts are the *testing.T a bubble may use, most recent last: Main's
	// hosting test, or the tests that called Bind. Guarded by mu.
	hosts []*testing.T
)

// Run calls fn inside a new synctest bubble and returns after fn and every
// goroutine it started have returned (synctest.Test semantics); bubbles of
// concurrent calls run side by side. It returns ErrNoHost outside Main and Bind, a *PanicError
// when fn panics, a *DeadlockError when the bubble deadlocks. fn must not
// call Run itself (a bubble cannot nest, and the second Run would wait for
// the first for ever).
func Run(fn func()) error { return run(fn, nil) }

// run is Run; enter, when set, is called inside the new bubble (with its
// name) before fn starts, and what it returns after the bubble has ended.
func run(fn func(), enter func(bubble string) (leave func())) error {
	if bubbleOf() != "" {
		return errors.New("bubblehost: Run called inside a synctest bubble; bubbles do not nest")
	}
	mu.RLock()
	defer mu.RUnlock()
	if len(hosts) == 0 {
		return ErrNoHost
	}
	t := hosts[len(hosts)-1]
	var leave func()
	defer func() {
		if leave != nil {
			leave()
		}
	}()

	var fnErr error
	var bubble string // "synctest bubble N", to pick its goroutines out of a dump
	inner := func(*testing.T) {
		bubble = bubbleOf()
		if enter != nil {
			leave = enter(bubble)
		}
		// fn runs on a goroutine of its own, so neither a panic nor a
		// runtime.Goexit in it reaches testing's tRunner (which would
		// print "--- FAIL" and re-panic, killing the process).
		done := make(chan error)
		go func() {
			returned := false
			defer func() {
				if returned {
					done <- nil
					return
				}
				if r := recover(); r != nil {
					done <- &PanicError{Value: r, Stack: debug.Stack()}
					return
				}
				done <- errors.New("synctest bubble: fn ended by runtime.Goexit (a t.Fatal or t.FailNow called inside the bubble?)")
			}()
			fn()
			returned = true
		}()
		fnErr = <-done
	}

	// synctest.Test runs on a goroutine of its own too: when testing
	// fails the inner test (the race detector reporting a race inside the
	// bubble), it calls FailNow on t, which ends the calling goroutine
	// with runtime.Goexit — that must not be the program's main.
	result := make(chan error)
	go func() {
		finished := false
		defer func() {
			r := recover()
			switch {
			case finished:
				result <- nil
			case r == nil:
				result <- errors.New("synctest bubble: the hosting test failed (a data race inside the bubble? the race detector's report is on standard error)")
			default:
				if d, ok := r.(error); ok && strings.HasPrefix(d.Error(), "deadlock: ") {
					result <- &DeadlockError{Reason: d.Error(), Blocked: blockedIn(bubble)}
					return
				}
				result <- &PanicError{Value: r, Stack: debug.Stack()}
			}
		}()
		synctest.Test(t, inner)
		finished = true
	}()
	err := <-result
	if fnErr != nil {
		// A panic in fn leaves its goroutines blocked, and synctest then
		// reports a deadlock as well; the panic is the cause.
		return fnErr
	}
	return err
}

// bubbleOf names the calling goroutine's bubble as goroutine dumps do
// ("synctest bubble 7").
func bubbleOf() string {
	buf := make([]byte, 256)
	head, _, _ := strings.Cut(string(buf[:runtime.Stack(buf, false)]), "\n")
	if i := strings.Index(head, "synctest bubble "); i >= 0 {
		return strings.TrimSuffix(head[i:], "]:")
	}
	return ""
}

// blockedIn lists the goroutines of one bubble, left blocked by a
// deadlock: each one's wait state and its innermost frame outside the
// runtime.
func blockedIn(bubble string) []string {
	if bubble == "" {
		return nil
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 3 || !strings.Contains(lines[0], ", "+bubble+"]") {
			continue
		}
		state := lines[0]
		if i := strings.Index(state, "["); i >= 0 {
			state = strings.TrimSuffix(state[i+1:], ", "+bubble+"]:")
		}
		where := ""
		for i := 1; i+1 < len(lines); i += 2 {
			fn := strings.TrimSpace(lines[i])
			if strings.HasPrefix(fn, "created by ") {
				break // the stack ended inside the machinery
			}
			if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/") || strings.HasPrefix(fn, "testing") || strings.Contains(fn, "/sim/bubblehost.") {
				continue // the hosting machinery, not the code under test
			}
			if strings.HasPrefix(fn, "time.") || strings.HasPrefix(fn, "sync.") {
				// time.Sleep, sync.(*Cond).Wait: say who called them,
				// which is what one needs to find the goroutine.
				continue
			}
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j]
			}
			file := strings.TrimSpace(lines[i+1])
			if j := strings.LastIndex(file, " +0x"); j >= 0 {
				file = file[:j]
			}
			where = fn + " at " + file
			break
		}
		if where == "" {
			continue // testing's and Run's own goroutines of the bubble
		}
		out = append(out, state+": "+where)
		if len(out) == 8 {
			out = append(out, "…")
			break
		}
	}
	return out
}

// Bind makes Run use t (for tests); it undoes itself in t.Cleanup. A
// bubble inherits nothing from t but the right to exist: fn is not given t,
// and a failing bubble comes back from Run as an error the test judges.
func Bind(t *testing.T) {
	t.Helper()
	mu.Lock()
	hosts = append(hosts, t)
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock() // waits for a Run that uses t
		defer mu.Unlock()
		for i := len(hosts) - 1; i >= 0; i-- {
			if hosts[i] == t {
				hosts = append(hosts[:i], hosts[i+1:]...)
				break
			}
		}
	})
}

// Main hosts bubbles in a program: call it from main as
// bubblehost.Main(realMain); it calls os.Exit with realMain's status.
// realMain sees the program's full os.Args.
func Main(main func() int) {
	args := os.Args
	if len(args) > 1 {
		// testing.MainStart's M.Run parses os.Args with flag.Parse; the
		// program's own flags are none of its business.
		os.Args = args[:1]
	}
	host := testing.InternalTest{Name: "bubblehost", F: func(t *testing.T) {
		os.Args = args
		mu.Lock()
		hosts = append(hosts, t)
		mu.Unlock()
		returned := false
		defer func() {
			if returned {
				return
			}
			// Leaving the test body any other way would make testing
			// print "--- FAIL: bubblehost" on stdout; say it as a plain Go
			// program would, on stderr, with the same status 2.
			if r := recover(); r != nil {
				fmt.Fprintf(os.Stderr, "panic: %v\n\n%s", r, debug.Stack())
			} else {
				fmt.Fprintln(os.Stderr, "fatal error: main called runtime.Goexit")
			}
			os.Exit(2)
		}()
		code := main()
		returned = true
		os.Exit(code)
	}}
	m := testing.MainStart(deps{}, []testing.InternalTest{host}, nil, nil, nil)
	// m.Run returns only if the hosting test never ran its body (testing
	// refused to start); its own message is already on stderr.
	code := m.Run()
	fmt.Fprintf(os.Stderr, "bubblehost: the testing package did not run the program (status %d)\n", code)
	if code == 0 {
		code = 2
	}
	os.Exit(code)
}

// deps implements the testing package's test-deps interface (see
// testDeps in $GOROOT/src/testing/testing.go) for a program that runs one
// internal test and none of testing's profiling, fuzzing or coverage: no
// -test.* flag ever reaches it.
type deps struct{}

// corpusEntry is testing's fuzz corpus entry, an alias of this unnamed
// struct type (testing/fuzz.go), so the two are identical types.
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

var errUnsupported = errors.New("bubblehost: not supported in a hosted program")

func (deps) ImportPath() string                          { return "" }
func (deps) ModulePath() string                          { return "" }
func (deps) MatchString(pat, str string) (bool, error)   { return regexp.MatchString(pat, str) }
func (deps) SetPanicOnExit0(bool)                        {}
func (deps) StartCPUProfile(io.Writer) error             { return errUnsupported }
func (deps) StopCPUProfile()                             {}
func (deps) StartTestLog(io.Writer)                      {}
func (deps) StopTestLog() error                          { return nil }
func (deps) WriteProfileTo(string, io.Writer, int) error { return errUnsupported }
func (deps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errUnsupported
}
func (deps) RunFuzzWorker(func(corpusEntry) error) error { return errUnsupported }
func (deps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) {
	return nil, errUnsupported
}
func (deps) CheckCorpus([]any, []reflect.Type) error { return errUnsupported }
func (deps) ResetCoverage()                          {}
func (deps) SnapshotCoverage()                       {}
func (deps) InitRuntimeCoverage() (mode string, tearDown func(string, string) (string, error), snapcov func() float64) {
	return "", nil, nil
}
