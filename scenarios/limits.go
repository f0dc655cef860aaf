package scenarios

import (
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"time"
)

// Limits bound what a scenario file may ask for, so that any accepted input
// runs in bounded memory (under 1 GB at the defaults; BENCHMARKS.md has
// the measurements). Each has a command-line flag to raise it.
type Limits struct {
	// FileBytes is the largest scenario file read (--max-file-size).
	FileBytes int64
	// Nodes, Clients and Faults bound the lists of a scenario
	// (--max-nodes, --max-clients, --max-faults).
	Nodes, Clients, Faults int
	// Cycles bounds the lock cycles of all clients together, which bound
	// the history's size (--max-cycles).
	Cycles int
	// Duration bounds the simulated run length (--max-duration).
	Duration time.Duration
	// Connections bounds clients × Redis nodes (a watchdog doubles a
	// client's share): every client holds one go-redis connection per
	// node, about 60 KB each (--max-connections).
	Connections int
	// Work bounds the kernel's work in one run (--max-work): events
	// scheduled (deliveries, timers, wake-ups), messages lost, and the
	// bytes ZooKeeper frames carry (one unit per 256). What a
	// run keeps grows with it, and no static check can bound it (a
	// thousand clients retrying for a day, every request dropped for a
	// year); a run that reaches it ends there with a verdict on the
	// history so far, its Result saying it was cut short (sim/budget.go).
	Work int
}

// DefaultLimits are the limits when no flag raises them.
var DefaultLimits = Limits{
	FileBytes: 1 << 20,
	Nodes:     64,
	Clients:   1000,
	Faults:    1000,
	Cycles:    20_000,
	Duration:  24 * time.Hour,
	// 64 nodes × 100 clients measured 390 MB peak (BENCHMARKS.md).
	Connections: 8000,
	// A million steps is about the old budget of 500,000 delivered
	// messages; the worst inputs found stay under 1 GB and about a
	// minute on two shared cores (scripts/rss-sweep.sh, BENCHMARKS.md).
	Work: 1_000_000,
}

// WorkLimit is the work budget of a run of s.
func (s *Scenario) WorkLimit() int {
	if s.limits != nil && s.limits.Work > 0 {
		return s.limits.Work
	}
	return DefaultLimits.Work
}

// LoadWith resolves a command-line argument under the given limits: a path
// to a scenario file if it looks like one, otherwise a built-in id. A file
// is read up to the size limit and no further, so a device or a huge file
// is refused at once.
func LoadWith(arg string, lim Limits) (*Scenario, error) {
	if !looksLikePath(arg) {
		s, err := Get(arg)
		if s != nil {
			s.limits = &lim // the run's work budget
		}
		return s, err
	}
	data, err := readLimited(arg, lim.FileBytes)
	if err != nil {
		return nil, err
	}
	return ParseWith(arg, data, lim)
}

func readLimited(path string, limit int64) ([]byte, error) {
	// Opened without blocking: a named pipe nobody writes to would hold
	// the open for ever (issue 32); it now reads as empty and is refused.
	// A pipe with a writer (process substitution) is read as before.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read scenario file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &FieldError{File: path, Msg: "expected a scenario file, found a directory"}
	}
	if limit <= 0 {
		limit = DefaultLimits.FileBytes
	}
	// One byte past the limit tells "too big" from "exactly the limit";
	// limit+1 must not wrap (a limit of MaxInt64 read as an empty file).
	data, err := io.ReadAll(io.LimitReader(f, min(limit, math.MaxInt64-1)+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read scenario file: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, &FieldError{File: path, Msg: fmt.Sprintf("expected a scenario file of at most %d bytes (the limit; raise it with --max-file-size), found more", limit)}
	}
	return data, nil
}
