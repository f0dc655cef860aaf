package main

// Guards for long jobs and output files: limits with flags to raise them,
// Ctrl-C that keeps what was found, files that are whole or absent, and
// terminal text without control characters.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/locklab/locklab/scenarios"
)

// maxFileBytes is the largest --max-file-size: a scenario is read whole
// into memory, and YAML past a gigabyte is not a scenario anyone wrote.
const maxFileBytes = 1 << 30

// limitFlags registers --max-file-size, --max-nodes, --max-clients,
// --max-faults, --max-cycles and --max-duration; the returned function
// reads them after parsing.
func limitFlags(fs *flag.FlagSet) func() (scenarios.Limits, error) {
	d := scenarios.DefaultLimits
	size := fs.Int64("max-file-size", d.FileBytes, "")
	nodes := fs.Int("max-nodes", d.Nodes, "")
	clients := fs.Int("max-clients", d.Clients, "")
	faultsN := fs.Int("max-faults", d.Faults, "")
	cycles := fs.Int("max-cycles", d.Cycles, "")
	dur := fs.String("max-duration", d.Duration.String(), "")
	conns := fs.Int("max-connections", d.Connections, "")
	work := fs.Int("max-work", d.Work, "")
	// --max-messages is the budget's old name: it bounded delivered
	// messages only, which let a run that lost every message go on for
	// ever (issue 25). It now sets the work budget.
	fs.Var(aliasFlag{fs, "max-work"}, "max-messages", "")
	return func() (scenarios.Limits, error) {
		lim := scenarios.Limits{FileBytes: *size, Nodes: *nodes, Clients: *clients, Faults: *faultsN, Cycles: *cycles, Connections: *conns, Work: *work}
		// Upper bounds keep the arithmetic on limits (a file read up to
		// size+1 bytes, products of counts) from overflowing: without one,
		// --max-file-size 9223372036854775807 wrapped around and every
		// file read as empty.
		for _, c := range []struct {
			name string
			v    int64
			max  int64
			unit string
		}{{"--max-file-size", *size, maxFileBytes, " bytes (1 GiB)"}, {"--max-nodes", int64(*nodes), math.MaxInt32, ""}, {"--max-clients", int64(*clients), math.MaxInt32, ""}, {"--max-faults", int64(*faultsN), math.MaxInt32, ""}, {"--max-cycles", int64(*cycles), math.MaxInt32, ""}, {"--max-connections", int64(*conns), math.MaxInt32, ""}, {"--max-work", int64(*work), math.MaxInt32, ""}} {
			if c.v < 1 || c.v > c.max {
				return lim, usagef("%s: expected a limit between 1 and %d%s, found %d", c.name, c.max, c.unit, c.v)
			}
		}
		v, err := time.ParseDuration(*dur)
		if err != nil || v <= 0 || v > scenarios.MaxDuration {
			return lim, usagef("--max-duration: expected a duration between 1ns and %v, found %q", scenarios.MaxDuration, *dur)
		}
		lim.Duration = v
		return lim, nil
	}
}

const limitsHelp = `Limits (raise them for bigger experiments; memory stays under 1 GB at the
defaults):
  --max-file-size BYTES  largest scenario file read (default 1048576)
  --max-nodes N          Redis nodes per scenario (default 64)
  --max-clients N        clients per scenario (default 1000)
  --max-faults N         faults per scenario (default 1000)
  --max-cycles N         lock cycles of all clients together (default 20000)
  --max-duration D       simulated run length (default 24h)
  --max-connections N    clients × Redis nodes, doubled with a watchdog
                         (default 8000)
  --max-work N           kernel steps one run may take: events scheduled
                         (deliveries, timers, wake-ups), messages lost, and a
                         step per 256 bytes of ZooKeeper frames; a run that
                         reaches it is cut short there and judged on its
                         history so far (default 1000000; --max-messages is
                         its old name)
`

// aliasFlag is a flag's old name: setting it sets the flag it names.
type aliasFlag struct {
	fs   *flag.FlagSet
	name string
}

func (a aliasFlag) String() string { return "" }
func (a aliasFlag) Set(v string) error {
	return a.fs.Set(a.name, v)
}

// interrupt turns the first SIGINT or SIGTERM into a cancelled context, so
// a long job stops handing out work, prints what it found and writes what
// is complete; a second signal exits at once. Exit status 130 (SIGINT) or
// 143 (SIGTERM), as shells report a process killed by the signal.
type interrupt struct {
	ctx    context.Context
	cancel context.CancelFunc
	code   atomic.Int32
	ch     chan os.Signal
}

func onInterrupt(stderr io.Writer, what string) *interrupt {
	in := &interrupt{ch: make(chan os.Signal, 2)}
	in.ctx, in.cancel = context.WithCancel(context.Background())
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range in.ch {
			code := int32(130)
			if s == syscall.SIGTERM {
				code = 143
			}
			if in.code.Load() != 0 {
				os.Exit(int(code))
			}
			in.code.Store(code)
			fmt.Fprintf(stderr, "\nlocklab: interrupted: %s stops, prints what it found and writes what is complete (again to quit at once)\n", what)
			in.cancel()
		}
	}()
	return in
}

// stop ends the signal handling; it returns the exit status the signal
// asks for (0: none came).
func (in *interrupt) stop() int {
	signal.Stop(in.ch)
	close(in.ch)
	return int(in.code.Load())
}

// writeAtomic writes a file through a temporary name in the same
// directory and renames it into place, so the file is whole or absent,
// whatever interrupts the write.
//
// The temporary name carries the writer's process id, .NAME.tmp-PID-*, so
// that one left behind by a process killed mid-write (kill -9, a second
// Ctrl-C) is removed by the next write of the same file: its PID no longer
// runs (issue 25).
func writeAtomic(path string, render func(io.Writer) error) error {
	f, err := createAtomic(path)
	if err != nil {
		return err
	}
	if err := render(f.f); err != nil {
		f.abort()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return f.commit()
}

// beforeRename, when set, runs once a temporary file is written and before
// it takes its name. Only tests set it: a child stopped there is killed
// mid-write, to show what the next write does with what it left.
var beforeRename func(tmp string)

// removeStaleTemps removes dir/.NAME.tmp-PID-* files whose PID is not a
// running process: what a killed writer left behind.
func removeStaleTemps(dir, name string) {
	prefix := "." + name + ".tmp-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || processRuns(pid) {
			continue
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
}

// processRuns reports whether pid is a running process (signal 0 checks
// without sending; EPERM means it runs under another user).
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func writeFileAtomic(path string, data []byte) error {
	return writeAtomic(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// isDir reports whether path names an existing directory (through
// symlinks).
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// sameFile reports whether a and b name the same file: the same inode when
// both exist, else the same resolved path (symlinks in the directory and
// in the name followed), never a comparison of spellings.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	return resolved(a) == resolved(b)
}

// resolved is path made absolute with every symlink that exists followed;
// a name that does not exist yet is joined to its resolved directory.
func resolved(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	dir, base := filepath.Split(abs)
	// A symlink whose target does not exist yet is where a write through
	// it lands: resolve its target (a bounded number of hops).
	for hops := 0; hops < 40; hops++ {
		target, err := os.Readlink(abs)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		abs = filepath.Clean(target)
		dir, base = filepath.Split(abs)
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(r, base)
	}
	return abs
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// term makes user text (ids, titles, narratives, file names) safe for a
// terminal: control characters are dropped, except newlines and tabs when
// multiline is set.
func term(s string, multiline bool) string {
	if !multiline {
		return scenarios.Printable(s, 0)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = scenarios.Printable(strings.ReplaceAll(l, "\t", "    "), 0)
	}
	return strings.Join(lines, "\n")
}

// shellWord quotes a file name for a command line a user can paste.
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./+=:,@", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(term(s, false), "'", `'\''`) + "'"
}

func parseCount(name, text string, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, usagef("%s: expected a number between %d and %d, found %q", name, lo, hi, text)
	}
	return v, nil
}
