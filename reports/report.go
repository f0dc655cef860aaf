// Package reports renders runs as self-contained HTML pages.
package reports

import (
	"fmt"
	"html/template"
	"os"

	"github.com/locklab/locklab/scenarios"
)

// WriteRunFile writes the HTML report of one run (and its comparisons) to
// path. replay is the command that reproduces the run.
func WriteRunFile(path string, res *scenarios.Result, cmp []scenarios.Comparison, replay string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cannot write report: %w", err)
	}
	defer f.Close()
	t := template.Must(template.New("r").Parse(`<!doctype html><title>{{.ID}}</title><h1>{{.ID}}</h1><p>{{.Title}}</p>`))
	return t.Execute(f, res.Scenario)
}
