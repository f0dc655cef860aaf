// Command locklab runs deterministic fault-injection scenarios against
// distributed lock algorithms and explains what went wrong.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/locklab/locklab/sim/bubblehost"
)

// usageError is bad input: the message says what was expected; exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit status without a message (the command already
// printed its outcome).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

type command struct {
	name    string
	summary string
	usage   string
	run     func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"list", "list the built-in scenarios", listUsage, runList},
		{"run", "run a scenario and check its verdict", runUsage, runRun},
		{"matrix", "every algorithm against every fault class, many random runs each", matrixHelp(), runMatrix},
		{"explore", "search random faults for a violation and shrink it", exploreHelp(), runExplore},
		{"merge", "join the outputs of 'explore --shard' into the sweep's summary", mergeUsage, runMerge},
		{"replay", "rerun a saved scenario or counterexample, byte for byte", replayUsage, runReplay},
		{"live", "run a scenario against real servers in real time (not deterministic)", liveUsage, runLive},
		{"course", "write the HTML course: each classic failure beside its fix", courseUsage, runCourse},
		{"help", "explain a command or the scenario file format", "", nil},
	}
}

const mainUsage = `locklab — a deterministic fault-injection lab for distributed locks.

Lock algorithms run against simulated Redis nodes and a simulated ZooKeeper
whose clocks jump, whose replies are lost and whose clients pause; a checker
flags mutual-exclusion violations, lost updates and lost liveness and names
the witness. The same seed gives the same run, byte for byte. Real client
libraries (the go-zookeeper client) run unmodified, inside a testing/synctest
bubble that this program hosts itself, so their timers follow virtual time.

Usage:
  locklab <command> [arguments]

Commands:
%s
Run 'locklab help <command>' for details, 'locklab help scenario' for the
scenario file format.

Exit status: 0 when a run matches its scenario's expectation (explore: no
violation found), 1 when it does not (explore: a violation found), 2 on bad
input, 130 (SIGINT) or 143 (SIGTERM) when interrupted.
`

// main goes through bubblehost.Main: scenarios that run a real client
// library (the go-zookeeper client) need testing/synctest bubbles, and a
// bubble needs a *testing.T that only a hosted test can provide
// (sim/bubblehost). The built-in algorithms run as before.
func main() {
	bubblehost.Main(func() int { return run(os.Args[1:], os.Stdout, os.Stderr) })
}

func run(args []string, stdout, stderr io.Writer) int {
	stdout, stderr = newTerminalWriter(stdout), newTerminalWriter(stderr)
	err := dispatch(args, stdout, stderr)
	var ue *usageError
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		printErrorLines(stderr, ue.msg)
		return 2
	default:
		printErrorLines(stderr, err.Error())
		return 2
	}
}

// printErrorLines prints each problem on its own line (a file's errors
// come all at once), without control characters.
func printErrorLines(w io.Writer, msg string) {
	for _, line := range strings.Split(msg, "\n") {
		fmt.Fprintf(w, "locklab: %s\n", term(line, false))
	}
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printMainUsage(stderr)
		return usagef("missing command; expected one of: %s", commandNames())
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "--help", "-help":
		printMainUsage(stdout)
		return nil
	case "help":
		return runHelp(rest, stdout)
	}
	for _, c := range commands() {
		if c.name == name && c.run != nil {
			return c.run(rest, stdout, stderr)
		}
	}
	return usagef("unknown command %q; expected one of: %s (see 'locklab help')", name, commandNames())
}

func commandNames() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

func printMainUsage(w io.Writer) {
	var b strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, mainUsage, b.String())
}

func runHelp(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		printMainUsage(stdout)
		return nil
	}
	if args[0] == "scenario" {
		fmt.Fprint(stdout, scenarioHelpText())
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] && c.usage != "" {
			fmt.Fprint(stdout, c.usage)
			return nil
		}
	}
	return usagef("no help for %q; expected a command (%s) or 'scenario'", args[0], commandNames())
}

// parseInterspersed parses flags that may come before or after positional
// arguments ("run del-wrong-client --seed 7").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v (see 'locklab help %s')", err, fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func newFlagSet(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { fmt.Fprint(stdout, usage) }
	return fs
}
