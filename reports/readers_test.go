package reports

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// No reader parses English back into facts (design.md, "Events are the
// record"): the reports, the checker and the course command read typed
// events. In their source, trace text appears only where it is shown to
// people: the trace table renders events (view.go's traceRows calls
// Text), and the count of trace lines is a length.
// The check is syntactic: event variables are named e or ev, results res,
// r or result, as they are throughout these packages.
func TestReadersDoNotMatchTraceText(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.go", "../checker/*.go", "../cmd/locklab/course.go", "../cmd/locklab/explore.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("found %d source files", len(files))
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(path)
		inLen := map[ast.Node]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "len" && len(call.Args) == 1 {
					inLen[call.Args[0]] = true
				}
				// e.Text() renders an event: only for display.
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Text" && len(call.Args) == 0 && base != "view.go" {
					t.Errorf("%s: renders an event's text outside the trace table", fset.Position(sel.Pos()))
				}
			}
			switch x := n.(type) {
			case *ast.SelectorExpr:
				switch x.Sel.Name {
				case "TraceEntry":
					t.Errorf("%s: reads trace lines (sim.TraceEntry); read events", fset.Position(x.Pos()))
				case "Trace":
					// A result's text trace (res.Trace); a view's rows
					// are not the trace.
					if id, ok := x.X.(*ast.Ident); ok && (id.Name == "res" || id.Name == "r" || id.Name == "result") && !inLen[x] {
						t.Errorf("%s: reads the text trace (Result.Trace); read Result.Events", fset.Position(x.Pos()))
					}
				case "Note":
					// An event's note (e.Note), not a fault's or a
					// matrix's Note.
					if id, ok := x.X.(*ast.Ident); ok && (id.Name == "e" || id.Name == "ev") {
						t.Errorf("%s: reads an untyped note's text", fset.Position(x.Pos()))
					}
				}
			}
			return true
		})
	}
}
