package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// A backend is one descriptor per room (issue 33): what the file check,
// reports, the runner, the matrix and live mode know of a backend is
// declared in the backend's own files (scenarios.RegisterBackend in
// scenarios/, runner.RegisterBackend in runner/, live's registerLive) and
// read from there, never decided by comparing the backend's name. This
// scans every non-test Go file outside the backends' own packages (sim/…,
// algorithms/…) and own files (those that register a backend) for a
// comparison (==, !=, a switch case, a map index, strings.HasPrefix and
// the like) against a backend's name,
// written as a string or as a package's Backend constant.
func TestNoBackendNameComparisons(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	names := backendNames(t)
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case strings.HasPrefix(d.Name(), ".") && rel != ".", d.Name() == "testdata",
				rel == "sim", rel == "algorithms": // the backends' own packages
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		found = append(found, backendNameComparisons(t, path, rel, names)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("backend-name comparisons outside the backends' own files (ask the descriptors, scenarios.BackendInfo and runner.BackendInfo, instead; docs/architecture.md, \"Add a backend\"):\n  %s", strings.Join(found, "\n  "))
	}
}

// backendNames are the registered backends' names, and every algorithm's
// backend, which must be one of them.
func backendNames(t *testing.T) []string {
	names := scenarios.Backends()
	for _, a := range algorithms.Names() {
		if info, _ := algorithms.Lookup(a); !slices.Contains(names, info.Backend) {
			t.Errorf("algorithm %s runs on backend %q, which registers no descriptor (scenarios.RegisterBackend)", a, info.Backend)
		}
	}
	// Each backend has its run half too, or no algorithm on it runs.
	for _, n := range names {
		if _, ok := runner.LookupBackend(n); !ok {
			t.Errorf("backend %q registers no runtime descriptor (runner.RegisterBackend in runner/)", n)
		}
	}
	if len(names) < 7 {
		t.Fatalf("only %d backends registered (%v); the scan would prove nothing", len(names), names)
	}
	return names
}

// backendNameComparisons lists the comparisons against a backend name in
// one file, or nothing if the file registers a backend (it is the
// backend's own).
func backendNameComparisons(t *testing.T, path, rel string, names []string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]bool{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = true
	}
	isName := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return e.Kind == token.STRING && err == nil && slices.Contains(names, s)
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && imports[x.Name] && e.Sel.Name == "Backend"
		}
		return false
	}
	var out []string
	registers := false
	ast.Inspect(f, func(n ast.Node) bool {
		var hit ast.Expr
		switch n := n.(type) {
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "RegisterBackend" || id.Name == "registerLive") {
				registers = true
			}
			// strings.HasPrefix(role, "zookeeper-ensemble") and the like.
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && imports["strings"] && slices.Contains([]string{"HasPrefix", "CutPrefix", "Contains", "EqualFold"}, sel.Sel.Name) {
				for _, a := range n.Args {
					if isName(a) {
						hit = a
					}
				}
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				hit = cmpOr(isName(n.X), isName(n.Y), n)
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if isName(e) {
					hit = e
				}
			}
		case *ast.IndexExpr:
			if isName(n.Index) {
				hit = n
			}
		}
		if hit != nil {
			out = append(out, filepath.ToSlash(rel)+":"+strconv.Itoa(fset.Position(hit.Pos()).Line))
		}
		return true
	})
	if registers {
		return nil
	}
	return out
}

func cmpOr(x, y bool, e ast.Expr) ast.Expr {
	if x || y {
		return e
	}
	return nil
}
