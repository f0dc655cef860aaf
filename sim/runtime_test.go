package sim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The world asks its runtime wherever the kernel and the bubble differ
// (runtime.go, issue 33): no code of the package tests which runtime it
// runs on. TestNoRuntimeKindBranch fails when such a test comes back:
//
//   - a runtime value compared with nil (w.rt == nil), or the old bubble
//     field (w.b != nil);
//   - a type assertion or type switch on a runtime (w.rt.(*bubble)),
//     except in World.Bubble, the one question asked from outside;
//   - a call of World.Bubble inside the package;
//   - a World field holding one runtime's type instead of Runtime.
func TestNoRuntimeKindBranch(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var checked int
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, problem := range runtimeKindBranches(fset, f) {
			t.Error(problem)
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d files of package sim; run the test from its directory", checked)
	}
}

// TestRuntimeKindBranchIsCaught shows the check catching each form it
// forbids, so that a check that silently matches nothing cannot pass.
func TestRuntimeKindBranchIsCaught(t *testing.T) {
	for _, src := range []string{
		"func (w *World) f() { if w.rt == nil {} }",
		"func (w *World) f() { if w.b != nil {} }",
		"func (p *Process) f() { if p.w.b == nil {} }",
		"func (w *World) f() { if nil != w.rt {} }",
		"func (w *World) f() { if _, ok := w.rt.(*bubble); ok {} }",
		"func (w *World) f() { switch w.rt.(type) {} }",
		"func (h *Host) f() { if h.w.Bubble() {} }",
		"type World struct { b *bubble }",
		"type World struct { k kernel }",
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", "package sim\n"+src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(runtimeKindBranches(fset, f)) == 0 {
			t.Errorf("not caught: %s", src)
		}
	}
}

// runtimeKindBranches lists the forbidden forms in f, each with its place.
func runtimeKindBranches(fset *token.FileSet, f *ast.File) []string {
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what+" (ask the runtime instead: sim/runtime.go)")
	}
	for _, d := range f.Decls {
		fn, isFunc := d.(*ast.FuncDecl)
		inBubbleQuery := isFunc && fn.Name.Name == "Bubble" && fn.Recv != nil
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					break
				}
				if (isNil(n.Y) && isRuntimeField(n.X)) || (isNil(n.X) && isRuntimeField(n.Y)) {
					report(n, "a runtime compared with nil")
				}
			case *ast.TypeAssertExpr:
				if isRuntimeField(n.X) && !inBubbleQuery {
					report(n, "a type assertion on the runtime")
				}
			case *ast.TypeSwitchStmt:
				if runtimeSwitched(n.Assign) {
					report(n, "a type switch on the runtime")
				}
			case *ast.CallExpr:
				if s, ok := n.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Bubble" && len(n.Args) == 0 {
					report(n, "World.Bubble called inside package sim")
				}
			case *ast.TypeSpec:
				if n.Name.Name != "World" {
					break
				}
				if st, ok := n.Type.(*ast.StructType); ok {
					for _, field := range st.Fields.List {
						if isRuntimeImpl(field.Type) {
							report(field, "a World field of one runtime's type")
						}
					}
				}
			}
			return true
		})
	}
	return out
}

func isNil(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "nil"
}

// isRuntimeField reports whether e is a world's runtime: x.rt, or the old
// bubble field w.b (x.w.b, w.b).
func isRuntimeField(e ast.Expr) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	switch s.Sel.Name {
	case "rt":
		return true
	case "b":
		switch x := s.X.(type) {
		case *ast.Ident:
			return x.Name == "w"
		case *ast.SelectorExpr:
			return x.Sel.Name == "w"
		}
	}
	return false
}

// runtimeSwitched reports whether a type switch's subject is a runtime.
func runtimeSwitched(s ast.Stmt) bool {
	var x ast.Expr
	switch s := s.(type) {
	case *ast.ExprStmt:
		x = s.X
	case *ast.AssignStmt:
		if len(s.Rhs) == 1 {
			x = s.Rhs[0]
		}
	}
	ta, ok := x.(*ast.TypeAssertExpr)
	return ok && isRuntimeField(ta.X)
}

// isRuntimeImpl reports whether a type expression names one runtime's
// type (bubble, kernel, or a pointer to one).
func isRuntimeImpl(e ast.Expr) bool {
	if st, ok := e.(*ast.StarExpr); ok {
		e = st.X
	}
	id, ok := e.(*ast.Ident)
	return ok && (id.Name == "bubble" || id.Name == "kernel")
}
