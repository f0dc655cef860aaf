package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/locklab/locklab/reports"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

const courseUsage = `Usage: locklab course --out DIR

Writes a course through the scenario catalogue into DIR (created if needed),
in six sections in teaching order: one Redis node, leases and release bugs,
replication and failover, Redlock and clocks, ZooKeeper sessions, fencing.
Each lesson page has learning objectives, the story, one timeline per run on
a shared clock with the mechanism drawn under the clients (each node's lock
key and TTL on its own clock, Redlock votes, replication, ZooKeeper sessions
and znodes, fencing comparisons), the fixed twin beside the failure, "try it
yourself" commands, questions to discuss and sources. Each lesson also gets a
printable one-page handout (LESSON-handout.html); DIR/glossary.html explains
the terms and DIR/index.html lists the lessons by section.

Shared assets are written once into DIR: locklab.css, locklab.js,
porcupine.html and, when a local copy of ECharts is available
(LOCKLAB_ECHARTS, or the cache filled by 'bash scripts/fetch-echarts.sh'),
echarts.min.js for the interactive charts. Nothing is loaded from the
network; keep the directory together.

Flags:
  --out DIR   directory to write the course into (required)

Progress goes to stderr, one line per lesson; the last line names the index.
Every page is written to a temporary name and renamed, so a page is whole
or absent. SIGINT/SIGTERM stops after the lesson in progress: the index
lists the lessons written (the rest as not run), exit status 130/143.
Exit status: 0 when every lesson was written and every run matched its
expectation, 1 when a run did not match or a lesson could not be written, 2 on
bad flags.
`

func runCourse(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("course", courseUsage, stdout)
	out := fs.String("out", "", "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("course takes no arguments, got %q (see 'locklab help course')", pos[0])
	}
	if strings.TrimSpace(*out) == "" {
		return usagef("course needs --out DIR, the directory to write the pages into (see 'locklab help course')")
	}
	// An existing file is refused before anything runs (exit 2, bad
	// input), not found out when the first page fails to write.
	if st, err := os.Stat(*out); err == nil && !st.IsDir() {
		return usagef("--out: %s is a file, not a directory; expected a directory to write the course into (created if needed)", term(*out, false))
	}
	all, err := scenarios.Catalogue()
	if err != nil {
		return err
	}
	mismatches := 0
	in := onInterrupt(stderr, "course")
	index, err := reports.WriteCourse(*out, all, reports.CourseOptions{
		Progress: func(done, total int, l reports.Lesson, file string, err error) {
			status := "ok"
			if err != nil {
				status = "FAILED: " + err.Error()
			}
			fmt.Fprintf(stderr, "course: [%d/%d] %s → %s (%s)\n", done, total, strings.Join(l.IDs(), " + "), file, status)
		},
		Run: func(sc *scenarios.Scenario) (*runner.Result, []runner.Comparison, error) {
			if in.ctx.Err() != nil {
				return nil, nil, errors.New("not run: interrupted")
			}
			res, cmp, err := runner.RunCompared(sc, sc.Seed, runner.Options{KeepTrace: true})
			if err == nil && !res.Matches() {
				mismatches++
				fmt.Fprintf(stderr, "course: %s does not match its expectation (replay: locklab run %s --seed %d)\n", sc.ID, sc.ID, res.Seed)
			}
			return res, cmp, err
		},
	})
	signalled := in.stop()
	if err != nil {
		fmt.Fprintf(stderr, "locklab: %v\n", err)
	}
	if index != "" {
		abs, aerr := filepath.Abs(index)
		if aerr != nil {
			abs = index
		}
		fmt.Fprintf(stdout, "Course index: %s\n", term(abs, false))
	}
	if signalled != 0 {
		return &exitError{signalled}
	}
	if err != nil {
		return &exitError{1}
	}
	if mismatches > 0 {
		return &exitError{1}
	}
	return nil
}
