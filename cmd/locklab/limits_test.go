package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The team's limits (issue 33): no non-test Go file past 600 lines, no
// function past 100. tooLong names, by file or "file func", what is over
// and could not be split yet, and why; an entry that is no longer over
// fails too, so the list only shrinks.
var tooLong = map[string]string{}

const (
	maxFileLines = 600
	maxFuncLines = 100
)

func TestFileAndFunctionLimits(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	over := map[string]int{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if (strings.HasPrefix(d.Name(), ".") && path != root) || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			over[rel] = n
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				over[rel+" "+fd.Name.Name] = n
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for what, n := range over {
		if _, ok := tooLong[what]; !ok {
			limit := maxFileLines
			if strings.Contains(what, " ") {
				limit = maxFuncLines
			}
			t.Errorf("%s: %d lines, over the limit of %d (split it; docs/architecture.md)", what, n, limit)
		}
	}
	for what := range tooLong {
		if _, ok := over[what]; !ok {
			t.Errorf("%s is on the allow-list (tooLong) but within the limits now: remove its entry", what)
		}
	}
}
