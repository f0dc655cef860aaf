package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/live"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

const liveUsage = `Usage: locklab live SCENARIO [flags]
       locklab live --all [--runs N] [--parallel P] > table.md

Runs the scenario against real servers, in real time: its Redis nodes as
redis-server processes on 127.0.0.1 (free ports, a temporary directory, a
password made for the run), the same algorithm code with real go-redis
clients, the scenario's faults made for real (message faults through a
proxy per client-server link, node crashes with SIGKILL, client pauses,
hangs, crashes and clocks in the harness, a server's clock step applied to
its keys' expiries), and the same checker over the real-time history.
Everything it started is stopped and removed at the end, also on error and
on Ctrl-C.

A live run is NOT deterministic and NOT replayable: real time and the
machine's scheduler decide what a seed does not. Run it several times
(--runs) and read how many runs showed each property, beside the verdict
the simulation gives the same file. A scenario with a part that cannot be
made live (a replica, a Sentinel failover, a server clock that drifts) is
refused with every reason, never run with the part left out.
See docs/live.md.

Exit status: 0 when every live run finished (a live verdict is reported
beside the simulated one, not judged against the file's expectation: real
time decides what a seed does not); 2 on bad input, a scenario not
expressible live or a server that would not start; 130 or 143 when
SIGINT or SIGTERM stopped it.

Flags:
  --runs N        live runs of the scenario, one after another (default 1)
  --seed N        seed for the clients' random draws (default: the file's)
  --timeout D     how long a client waits for a Redis reply when the file
                  sets no clients.timeout (default 50ms, the simulation's;
                  raise it on a loaded machine)
  --json          one JSON object: the simulated verdict and every live run
  --all           every catalogue scenario: a Markdown table of the simulated
                  verdict beside how many live runs violated each property
                  (docs/live-table.md is this table)
  --parallel P    with --all, scenarios run at once, each with its own
                  servers (default 1)
`

// liveRunOutput is one live run in --json.
type liveRunOutput struct {
	Verdict checker.Verdict `json:"verdict"`
	Witness []string        `json:"witness"`
	Seconds float64         `json:"seconds"`
	Faults  []string        `json:"faults"`
}

// liveOutput is the --json object of 'locklab live'.
type liveOutput struct {
	Scenario      string            `json:"scenario"`
	Live          bool              `json:"live"`
	Deterministic bool              `json:"deterministic"`
	Expected      map[string]string `json:"expected"`
	Simulated     checker.Verdict   `json:"simulated"`
	Runs          []liveRunOutput   `json:"runs"`
	// Violated counts, per property, the live runs that violated it.
	Violated map[string]int `json:"violated"`
}

func runLive(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("live", liveUsage, stdout)
	runs := fs.Int("runs", 1, "")
	seedText := fs.String("seed", "", "")
	timeout := fs.Duration("timeout", 50*time.Millisecond, "")
	asJSON := fs.Bool("json", false, "")
	all := fs.Bool("all", false, "")
	parallel := fs.Int("parallel", 1, "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *parallel < 1 || *parallel > 16 {
		return usagef("--parallel: expected a number from 1 to 16, got %d", *parallel)
	}
	if *all {
		if len(pos) != 0 || *asJSON || *seedText != "" {
			return usagef("--all runs the whole catalogue: it takes no scenario, --json or --seed")
		}
		if *runs < 1 || *runs > 1000 {
			return usagef("--runs: expected a number from 1 to 1000, got %d", *runs)
		}
		in := onInterrupt(stderr, "the live table")
		defer in.stop()
		return liveTable(in, *runs, *parallel, live.Options{Timeout: *timeout}, stdout, stderr)
	}
	if len(pos) != 1 {
		return usagef("live needs exactly one scenario (an id from 'locklab list' or a .yaml file), got %d arguments", len(pos))
	}
	if *runs < 1 || *runs > 1000 {
		return usagef("--runs: expected a number from 1 to 1000, got %d", *runs)
	}
	if *timeout <= 0 || *timeout > time.Minute {
		return usagef("--timeout: expected a duration above 0 and at most 1m, got %v", *timeout)
	}
	sc, err := scenarios.Load(pos[0])
	if err != nil {
		return &usageError{err.Error()}
	}
	for _, w := range sc.Warnings {
		fmt.Fprintf(stderr, "locklab: warning: %s\n", term(w.Error(), false))
	}
	seed := sc.Seed
	if *seedText != "" {
		if _, err := fmt.Sscan(*seedText, &seed); err != nil {
			return usagef("--seed: expected a non-negative integer, got %q", *seedText)
		}
	}
	sim, err := runner.Run(sc, seed, runner.Options{NoTrace: true})
	if err != nil {
		return err
	}
	in := onInterrupt(stderr, "the live run")
	defer in.stop()
	out := liveOutput{Scenario: sc.ID, Live: true, Expected: expectedMap(sc), Simulated: sim.Report.Verdict, Runs: []liveRunOutput{}, Violated: map[string]int{}}
	if !*asJSON {
		fmt.Fprintf(stdout, "%s — LIVE: real servers on 127.0.0.1, real time (not deterministic, not replayable)\n", sc.ID)
		fmt.Fprintf(stdout, "simulated (seed %d): %s\n", seed, verdictLine(sim.Report.Verdict))
	}
	for i := 0; i < *runs; i++ {
		opt := live.Options{Seed: seed + uint64(i), Timeout: *timeout}
		if !*asJSON {
			fmt.Fprintf(stdout, "\nlive run %d of %d (about %v at most):\n", i+1, *runs, sc.Duration.D())
			opt.Log = func(line string) { fmt.Fprintf(stdout, "  fault %s\n", strings.TrimSpace(line)) }
		}
		res, err := live.Run(in.ctx, sc, opt)
		if err != nil {
			if code := in.code.Load(); code != 0 {
				return &exitError{int(code)}
			}
			return err
		}
		ro := liveRunOutput{Verdict: res.Report.Verdict, Witness: witnessText(res.Report), Seconds: res.End.Seconds(), Faults: []string{}}
		for _, a := range res.Applied {
			ro.Faults = append(ro.Faults, fmt.Sprintf("%.3fs %s", a.At.Seconds(), a.Text))
		}
		out.Runs = append(out.Runs, ro)
		for name, st := range map[string]checker.Status{"mutual_exclusion": ro.Verdict.MutualExclusion, "resource": ro.Verdict.Resource, "liveness": ro.Verdict.Liveness} {
			if st == checker.Violated {
				out.Violated[name]++
			}
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "  verdict: %s (%.1f s)\n", verdictLine(ro.Verdict), ro.Seconds)
			for _, w := range ro.Witness {
				fmt.Fprintf(stdout, "  witness: %s\n", term(w, false))
			}
		}
	}
	if *asJSON {
		return writeJSON(stdout, out)
	}
	fmt.Fprintf(stdout, "\nover %d live run(s): mutual exclusion violated in %d, resource in %d, liveness in %d\n",
		*runs, out.Violated["mutual_exclusion"], out.Violated["resource"], out.Violated["liveness"])
	return nil
}

// verdictLine is a verdict on one line.
func verdictLine(v checker.Verdict) string {
	return fmt.Sprintf("mutual exclusion %s, resource %s, liveness %s", v.MutualExclusion, v.Resource, v.Liveness)
}
