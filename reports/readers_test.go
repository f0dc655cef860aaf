package reports

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// No reader parses English back into facts (docs/design.md, "Events are the
// record"): the reports, the checker and the course command read typed
// events. In their source, trace text appears only where it is shown to
// people: the trace table renders events (view.go's traceRows calls
// Text), and the count of trace lines is a length. An event's summary
// for people (Command), its Note and its Reason are never taken apart
// (strings, strconv, regexp, Sscan) nor copied into a variable for that:
// a command's words come from Args, a ZooKeeper frame's from Key, Reply,
// Session and Ephemeral. Comparing them whole, showing them and using
// them as map keys is allowed.
// The check is syntactic: event variables are named e or ev, results res,
// r or result, as they are throughout these packages.
func TestReadersDoNotMatchTraceText(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.go", "../checker/*.go", "../cmd/locklab/course.go", "../cmd/locklab/explore.go", "../runner/excuses.go"} {
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
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Text" && len(call.Args) == 0 && base != "view.go" && base != "traceview.go" {
					t.Errorf("%s: renders an event's text outside the trace table", fset.Position(sel.Pos()))
				}
			}
			switch x := n.(type) {
			case *ast.CallExpr:
				// An event's summary for people (Command), its reason or
				// its note handed to a function that takes text apart.
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && textParser(sel) {
					for _, arg := range x.Args {
						if f := summaryField(arg); f != "" {
							t.Errorf("%s: takes an event's %s apart (%s.%s); read its typed fields (Args, Key, Reply, Op...)", fset.Position(x.Pos()), f, exprName(sel.X), sel.Sel.Name)
						}
					}
				}
			case *ast.AssignStmt:
				// ... or copied into a variable to be taken apart later.
				for i, rhs := range x.Rhs {
					if f := summaryField(rhs); f != "" && i < len(x.Lhs) {
						if _, ok := x.Lhs[i].(*ast.Ident); ok {
							if _, direct := rhs.(*ast.SelectorExpr); direct {
								t.Errorf("%s: copies an event's %s into a variable", fset.Position(x.Pos()), f)
							}
						}
					}
				}
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

// textParser is a call that takes text apart: a function of package
// strings, bytes, strconv or regexp, fmt's Sscan family, or a regexp's
// Match/Find methods.
func textParser(sel *ast.SelectorExpr) bool {
	if pkg, ok := sel.X.(*ast.Ident); ok {
		switch pkg.Name {
		case "strings", "bytes", "strconv", "regexp":
			return true
		case "fmt":
			return strings.HasPrefix(sel.Sel.Name, "Sscan")
		}
	}
	return strings.HasPrefix(sel.Sel.Name, "Match") || strings.HasPrefix(sel.Sel.Name, "Find")
}

// summaryField names the text field of an event (e.Command, e.Note,
// e.Reason on a variable named e or ev) that expr is or contains, or "".
func summaryField(expr ast.Expr) string {
	found := ""
	ast.Inspect(expr, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && (id.Name == "e" || id.Name == "ev") {
				switch sel.Sel.Name {
				case "Command":
					found = "summary (Command)"
				case "Note", "Reason":
					found = sel.Sel.Name
				}
			}
		}
		return found == ""
	})
	return found
}

func exprName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "…"
}
