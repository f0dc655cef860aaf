package main

// Output files around a run (issue 32): every path a command writes is
// checked before the run, never replaces a device, a pipe or an input of
// the command, and the run's record streams to disk instead of being held
// in memory. The verdict is printed before any file is written; a write
// that fails after that is said on stderr and sets exit status 3.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

// exitWriteFailed is the exit status of a command whose run finished and
// whose outcome was printed, but one of whose output files could not be
// written (documented in README.md, "Bad input").
const exitWriteFailed = 3

// outputFlag is one file a command writes, named by the flag that names
// it ("--report").
type outputFlag struct {
	flag string
	path string
}

// checkOutputs refuses, before anything runs, output paths that are not a
// regular file or a new name in an existing writable directory (with
// --force too: --force replaces files, never devices, pipes, sockets or
// directories), an existing file without force, a path that is the same
// file as one of inputs, and two outputs that are the same file. Files are
// compared by device and inode, through links and any spelling (sameFile).
// Paths "" (not asked for) and "-" (stdout) are not files.
func checkOutputs(inputs []string, outs []outputFlag, force bool) error {
	var named []outputFlag
	for _, o := range outs {
		if o.path == "" || o.path == "-" {
			continue
		}
		if err := checkOutputPath(o, force); err != nil {
			return err
		}
		for _, in := range inputs {
			if in != "" && in != "-" && exists(in) && sameFile(o.path, in) {
				return usagef("%s: %s is the same file as the input %s; writing it would destroy the input, even with --force; name another file", o.flag, term(o.path, false), term(in, false))
			}
		}
		for _, p := range named {
			if sameFile(o.path, p.path) {
				return usagef("%s and %s name the same file %s; one would overwrite the other; name two files", p.flag, o.flag, term(o.path, false))
			}
		}
		named = append(named, o)
	}
	return nil
}

// checkOutputPath refuses one output path that cannot be written as a
// regular file.
func checkOutputPath(o outputFlag, force bool) error {
	st, err := os.Stat(o.path)
	switch {
	case err == nil && st.IsDir():
		return usagef("%s: %s is a directory; expected a file name", o.flag, term(o.path, false))
	case err == nil && !st.Mode().IsRegular():
		return usagef("%s: %s is %s, not a regular file; locklab writes only regular files, even with --force (which replaces files); name a file", o.flag, term(o.path, false), fileKind(st.Mode()))
	case err == nil && !force:
		return usagef("%s: %s exists; pass --force to replace it, or name another file", o.flag, term(o.path, false))
	case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return usagef("%s: cannot use %s: %v", o.flag, term(o.path, false), err)
	}
	// The file is written to a temporary name in its directory and
	// renamed (writeAtomic), so the directory must exist and be writable;
	// a dangling symlink is written through to its target's directory.
	dir, shown := filepath.Dir(resolved(o.path)), filepath.Dir(o.path)
	if dst, err := os.Stat(dir); err != nil {
		return usagef("%s: %s: the directory %s does not exist; create it or name a file in an existing directory", o.flag, term(o.path, false), term(shown, false))
	} else if !dst.IsDir() {
		return usagef("%s: %s: %s is not a directory; name a file in an existing directory", o.flag, term(o.path, false), term(shown, false))
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return usagef("%s: %s: the directory %s is not writable (%v); name a file in a writable directory", o.flag, term(o.path, false), term(shown, false), err)
	}
	return nil
}

// fileKind names a file type that is not a regular file, for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// atomicFile is a file being written under a temporary name beside its
// path; commit renames it into place, so the file is whole or absent.
type atomicFile struct {
	path string
	f    *os.File
}

// createAtomic opens the temporary file of path (writeAtomic's naming:
// .NAME.tmp-PID-*, so one a killed writer left is removed by the next).
// An existing path that is not a regular file is refused here too, so no
// caller can replace a device, whatever it checked before.
func createAtomic(path string) (*atomicFile, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("cannot write %s: it is %s, not a regular file", path, fileKind(st.Mode()))
	}
	dir := filepath.Dir(path)
	removeStaleTemps(dir, filepath.Base(path))
	f, err := os.CreateTemp(dir, fmt.Sprintf(".%s.tmp-%d-*", filepath.Base(path), os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	return &atomicFile{path: path, f: f}, nil
}

// abort removes the temporary file.
func (a *atomicFile) abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}

// commit closes the temporary file and gives it its name.
func (a *atomicFile) commit() error {
	tmp := a.f.Name()
	if err := a.f.Chmod(0o644); err != nil {
		a.abort()
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	if err := a.f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	if beforeRename != nil {
		beforeRename(tmp)
	}
	if err := os.Rename(tmp, a.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %w", a.path, err)
	}
	return nil
}

// recordStream takes a run's events as they happen (runner.Options.Sink)
// and writes them out at once, so --events and --trace cost disk, not
// memory, however long the run: the events as JSON Lines to their file
// (or stdout), the text trace to an unnamed spool file that is printed
// after the summary, where --trace always printed it.
type recordStream struct {
	events     *atomicFile
	eventsOut  *bufio.Writer
	eventLines *event.JSONLines
	trace      *os.File
	traceOut   *bufio.Writer
	err        error
}

// openRecordStream opens what --events PATH ("-": stdout) and --trace ask
// for; nil when neither is asked.
func openRecordStream(eventsPath string, stdout io.Writer, trace bool) (*recordStream, error) {
	if eventsPath == "" && !trace {
		return nil, nil
	}
	s := &recordStream{}
	switch eventsPath {
	case "":
	case "-":
		s.eventsOut = bufio.NewWriterSize(stdout, 1<<16)
	default:
		f, err := createAtomic(eventsPath)
		if err != nil {
			return nil, fmt.Errorf("--events: %w", err)
		}
		s.events = f
		s.eventsOut = bufio.NewWriterSize(f.f, 1<<16)
	}
	if s.eventsOut != nil {
		s.eventLines = event.NewJSONLines(s.eventsOut)
	}
	if trace {
		f, err := os.CreateTemp("", "locklab-trace-*")
		if err != nil {
			s.abort()
			return nil, fmt.Errorf("--trace: cannot open a spool file: %w", err)
		}
		// Unnamed at once: the spool never outlives the process.
		os.Remove(f.Name())
		s.trace = f
		s.traceOut = bufio.NewWriterSize(f, 1<<16)
	}
	return s, nil
}

// add is the run's sink: one event and its text line. The first error
// stops the writing; finish reports it.
func (s *recordStream) add(e *event.Event, text []byte) {
	if s.err != nil {
		return
	}
	if s.eventLines != nil {
		if err := s.eventLines.Write(e); err != nil {
			s.err = fmt.Errorf("--events: %w", err)
			return
		}
	}
	if s.traceOut != nil {
		line := sim.TraceEntry{At: e.At, Actor: e.Actor, Text: string(text)}.String()
		if _, err := fmt.Fprintf(s.traceOut, "  %s\n", term(line, false)); err != nil {
			s.err = fmt.Errorf("--trace: cannot spool the trace: %w", err)
		}
	}
}

// sink is add as a runner.Options.Sink (nil for a nil stream).
func (s *recordStream) sink() func(*event.Event, []byte) {
	if s == nil {
		return nil
	}
	return s.add
}

// printTrace copies the spooled text trace to w.
func (s *recordStream) printTrace(w io.Writer) error {
	if s == nil || s.trace == nil {
		return nil
	}
	if err := s.traceOut.Flush(); err != nil {
		return err
	}
	if _, err := s.trace.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(w, s.trace)
	return err
}

// finish writes out what is buffered and gives the events file its name;
// the error is the first one the stream met.
func (s *recordStream) finish() error {
	if s == nil {
		return nil
	}
	if s.trace != nil {
		s.trace.Close()
	}
	if s.eventsOut == nil {
		return s.err
	}
	if s.err == nil {
		if err := s.eventsOut.Flush(); err != nil {
			s.err = fmt.Errorf("--events: %w", err)
		}
	}
	if s.events == nil {
		return s.err
	}
	if s.err != nil {
		s.events.abort()
		return s.err
	}
	if err := s.events.commit(); err != nil {
		return fmt.Errorf("--events: %w", err)
	}
	return nil
}

// abort drops the stream's files.
func (s *recordStream) abort() {
	if s == nil {
		return
	}
	if s.events != nil {
		s.events.abort()
	}
	if s.trace != nil {
		s.trace.Close()
	}
}

// defaultReportBytes is --max-report-bytes's default: the trace a report
// keeps in memory. A run with its report costs about reportMemoryFactor
// times that on top of the run itself (BENCHMARKS.md, "Output files":
// 52162 events, 16-32 MB kept, 77 MB plain and 160 MB with the report),
// and the heaviest accepted run takes about 800 MB plain (1000 MySQL
// clients for an hour), so 48 MiB keeps any run with --report under 1 GB.
const defaultReportBytes = 48 << 20

// maxReportBytes bounds --max-report-bytes (16 GiB: past it no machine
// locklab runs on draws the page).
const maxReportBytes = 16 << 30

// reportMemoryFactor is how much memory a report costs per byte of kept
// trace, measured and rounded up (BENCHMARKS.md, "Output files").
const reportMemoryFactor = 4
