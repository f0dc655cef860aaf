package main

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/live"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// liveRow is one catalogue scenario in the sim-versus-live table.
type liveRow struct {
	ID        string
	Expected  map[string]string
	Simulated checker.Verdict
	Runs      int
	Violated  map[string]int
	// Refused is why the scenario was not run live (not expressible, a
	// missing server, an error), or "".
	Refused string
}

// liveTable runs every catalogue scenario live, runs times each, parallel
// scenarios at once (each with its own servers), and writes the table as
// Markdown. Progress goes to stderr.
func liveTable(in *interrupt, runs, parallel int, opt live.Options, stdout, stderr io.Writer) error {
	cat, err := scenarios.Catalogue()
	if err != nil {
		return err
	}
	rows := make([]liveRow, len(cat))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rows[i] = liveScenario(in, cat[i], runs, opt)
				mu.Lock()
				done++
				fmt.Fprintf(stderr, "live table: [%d/%d] %s: %s\n", done, len(cat), cat[i].ID, rowSummary(rows[i]))
				mu.Unlock()
			}
		}()
	}
	for i := range cat {
		if in.ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if code := in.code.Load(); code != 0 {
		return &exitError{int(code)}
	}
	writeLiveTable(stdout, rows, runs)
	return nil
}

// liveScenario runs one scenario's simulated and live runs.
func liveScenario(in *interrupt, sc *scenarios.Scenario, runs int, opt live.Options) liveRow {
	row := liveRow{ID: sc.ID, Expected: expectedMap(sc), Runs: runs, Violated: map[string]int{}}
	sim, err := runner.Run(sc, sc.Seed, runner.Options{NoTrace: true})
	if err != nil {
		row.Refused = "simulation: " + err.Error()
		return row
	}
	row.Simulated = sim.Report.Verdict
	if err := live.Installed(sc); err != nil {
		row.Refused = err.Error()
		return row
	}
	for i := 0; i < runs; i++ {
		o := opt
		o.Seed = sc.Seed + uint64(i)
		res, err := live.Run(in.ctx, sc, o)
		if err != nil {
			row.Refused = err.Error()
			return row
		}
		v := res.Report.Verdict
		for name, st := range map[string]checker.Status{"mutual_exclusion": v.MutualExclusion, "resource": v.Resource, "liveness": v.Liveness} {
			if st == checker.Violated {
				row.Violated[name]++
			}
		}
	}
	return row
}

func rowSummary(r liveRow) string {
	if r.Refused != "" {
		return "not run live: " + strings.SplitN(r.Refused, "\n", 2)[0]
	}
	return fmt.Sprintf("live %s, simulated %s", liveCounts(r), simShort(r.Simulated))
}

func liveCounts(r liveRow) string {
	return fmt.Sprintf("%d/%d/%d of %d", r.Violated["mutual_exclusion"], r.Violated["resource"], r.Violated["liveness"], r.Runs)
}

func simShort(v checker.Verdict) string {
	return fmt.Sprintf("%s/%s/%s", v.MutualExclusion, v.Resource, v.Liveness)
}

// agrees reports whether every live run gave the simulated verdict.
func (r liveRow) agrees() bool {
	for name, st := range map[string]checker.Status{"mutual_exclusion": r.Simulated.MutualExclusion, "resource": r.Simulated.Resource, "liveness": r.Simulated.Liveness} {
		want := 0
		if st == checker.Violated {
			want = r.Runs
		}
		if r.Violated[name] != want {
			return false
		}
	}
	return true
}

func writeLiveTable(w io.Writer, rows []liveRow, runs int) {
	fmt.Fprintf(w, "| scenario | simulated (mutual exclusion / resource / liveness) | live: runs violating each, of %d | agrees |\n| --- | --- | --- | --- |\n", runs)
	for _, r := range rows {
		if r.Refused != "" {
			fmt.Fprintf(w, "| `%s` | %s | not run live: %s | — |\n", r.ID, simShort(r.Simulated), refusalCell(r.ID, r.Refused))
			continue
		}
		fmt.Fprintf(w, "| `%s` | %s | %d / %d / %d | %s |\n", r.ID, simShort(r.Simulated),
			r.Violated["mutual_exclusion"], r.Violated["resource"], r.Violated["liveness"], map[bool]string{true: "yes", false: "**no**"}[r.agrees()])
	}
}

// refusalCell is why scenario id was not run live, as one table cell: the
// reasons of a NotExpressible on one line, a pipe escaped.
func refusalCell(id, refused string) string {
	reason := strings.ReplaceAll(strings.TrimPrefix(refused, "scenario "+id+" is not expressible live:"), "\n", " ")
	return strings.ReplaceAll(strings.TrimSpace(reason), "|", "\\|")
}
