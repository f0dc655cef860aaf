package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/live"
	"github.com/locklab/locklab/scenarios"
)

// TestLiveTableMatchesCatalogue keeps docs/live-table.md true without a
// live run: every catalogue scenario has exactly one row; a "not run live"
// row gives exactly the reasons live mode gives today, and a row with live
// counts is one live mode can make; the simulated column agrees with the
// scenario's asserted verdict; the Result line counts the rows. A scenario
// added to the catalogue, or a backend or fault made live, shows here as
// the row to add or rerun (`locklab live NAME --runs 1`).
func TestLiveTableMatchesCatalogue(t *testing.T) {
	raw, err := os.ReadFile("../../docs/live-table.md")
	if err != nil {
		t.Fatal(err)
	}
	rowRe := regexp.MustCompile("^\\| `([^`]+)` \\| ([a-z]+)/([a-z]+)/([a-z]+) \\| (.*) \\| (yes|\\*\\*no\\*\\*|—) \\|$")
	rows := map[string][]string{}
	var agree, disagree, notRun int
	for i, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		m := rowRe.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("docs/live-table.md:%d: a row the table's writer would not make: %q", i+1, line)
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("docs/live-table.md:%d: a second row for %s", i+1, m[1])
		}
		rows[m[1]] = m[2:]
		switch m[6] {
		case "yes":
			agree++
		case "—":
			notRun++
		default:
			disagree++
		}
	}
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		row, ok := rows[sc.ID]
		if !ok {
			t.Errorf("docs/live-table.md has no row for %s: run `locklab live %s --runs 1` and add it", sc.ID, sc.ID)
			continue
		}
		delete(rows, sc.ID)
		checkLiveRowVerdict(t, sc, row[:3])
		cell := row[3]
		reason, refused := strings.CutPrefix(cell, "not run live: ")
		err := live.Expressible(sc)
		switch {
		case refused && err == nil:
			t.Errorf("docs/live-table.md: %s reads \"not run live\", but live mode can make it now: run `locklab live %s --runs 1` and put its row in", sc.ID, sc.ID)
		case refused && refusalCell(sc.ID, err.Error()) != reason:
			t.Errorf("docs/live-table.md: %s's reasons are stale:\n table: %s\n today: %s", sc.ID, reason, refusalCell(sc.ID, err.Error()))
		case !refused && err != nil:
			t.Errorf("docs/live-table.md: %s has live counts, but live mode refuses it today: %v", sc.ID, err)
		}
	}
	for id := range rows {
		t.Errorf("docs/live-table.md has a row for %s, which is not in the catalogue", id)
	}
	want := fmt.Sprintf("Result: %d scenarios agree, %d disagrees, %d were not run live.", agree, disagree, notRun)
	if disagree != 1 {
		want = strings.Replace(want, "disagrees", "disagree", 1)
	}
	if !strings.Contains(string(raw), want) {
		t.Errorf("docs/live-table.md: the Result line should read %q", want)
	}
}

// checkLiveRowVerdict compares a row's simulated column with what the
// scenario asserts (a field the file leaves out is not compared).
func checkLiveRowVerdict(t *testing.T, sc *scenarios.Scenario, got []string) {
	t.Helper()
	want := []checker.Status{sc.Expect.MutualExclusion, sc.Expect.Resource, sc.Expect.Liveness}
	names := []string{"mutual exclusion", "resource", "liveness"}
	for i, w := range want {
		if w != "" && string(w) != got[i] {
			t.Errorf("docs/live-table.md: %s's simulated %s is %s, the scenario expects %s", sc.ID, names[i], got[i], w)
		}
	}
}
