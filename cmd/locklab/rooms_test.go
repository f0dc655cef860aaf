package main

import (
	gobuild "go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/locklab/locklab/"

// rooms is docs/architecture.md's table "Rooms and what they may import":
// each package of the module and the module's packages its non-test files
// may import. A package missing here, or an import outside its list,
// fails TestRoomImports, so the table and the code move together.
var rooms = map[string][]string{
	"sim/event":                      nil,
	"checker":                        nil,
	"sim":                            {"checker", "sim/event"},
	"sim/zk/wire":                    nil,
	"sim/zk/ensemble":                {"sim", "sim/event", "sim/zk/wire"},
	"sim/pgnode":                     {"sim/event"},
	"sim/mysqlnode":                  {"sim/event"},
	"sim/dbnet":                      {"sim", "sim/event"},
	"sim/bubblehost":                 nil,
	"sim/internal/realredis":         nil,
	"sim/differential":               nil,
	"sim/proptest":                   nil,
	"faults":                         {"sim", "sim/event"},
	"algorithms":                     nil,
	"algorithms/zklock/gozk":         {"algorithms"},
	"algorithms/pglock":              {"algorithms"},
	"algorithms/mysqllock":           {"algorithms"},
	"algorithms/fslock":              {"algorithms", "faults", "sim/fsnode"},
	"sim/fsnode":                     {"sim", "sim/event"},
	"sim/mssqlnode":                  {"sim/event"},
	"algorithms/mssqllock":           {"algorithms"},
	"sim/etcdnode":                   {"sim", "sim/dbnet", "sim/event"},
	"algorithms/etcdlock":            {"algorithms"},
	"scenarios":                      {"algorithms", "algorithms/etcdlock", "algorithms/fslock", "algorithms/mssqllock", "algorithms/mysqllock", "algorithms/pglock", "algorithms/zklock/gozk", "checker", "faults"},
	"runner":                         {"algorithms", "algorithms/etcdlock", "algorithms/fslock", "algorithms/mssqllock", "algorithms/mysqllock", "algorithms/pglock", "algorithms/zklock/gozk", "checker", "faults", "scenarios", "sim", "sim/bubblehost", "sim/dbnet", "sim/etcdnode", "sim/event", "sim/fsnode", "sim/mssqlnode", "sim/mysqlnode", "sim/pgnode", "sim/zk/ensemble"},
	"matrix":                         {"algorithms", "checker", "faults", "runner", "scenarios"},
	"explore":                        {"algorithms", "checker", "faults", "matrix", "runner", "scenarios"},
	"locktest":                       {"algorithms", "algorithms/etcdlock", "algorithms/fslock", "algorithms/mssqllock", "algorithms/mysqllock", "algorithms/pglock", "algorithms/zklock/gozk", "checker", "explore", "faults", "matrix", "runner", "scenarios", "sim", "sim/event", "sim/fsnode"},
	"locktest/htmlreport":            {"locktest", "reports", "runner"},
	"reports":                        {"algorithms", "checker", "faults", "runner", "scenarios", "sim", "sim/event"},
	"live":                           {"algorithms", "algorithms/mysqllock", "algorithms/pglock", "algorithms/zklock/gozk", "checker", "faults", "runner", "scenarios", "sim/zk/wire"},
	"cmd/locklab":                    {"algorithms", "checker", "explore", "faults", "live", "matrix", "reports", "runner", "scenarios", "sim", "sim/bubblehost", "sim/event"},
	"cmd/locklab/internal/mutantrun": {"runner", "scenarios", "sim/bubblehost"},
	"cmd/locklab-image":              nil,
	"examples/redislock":             nil,
	"examples/redsync":               nil,
	"examples/renewal":               nil,
	"examples/zknewlock":             nil,
}

func TestRoomImports(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		if seen[rel] {
			return nil
		}
		seen[rel] = true
		pkg, err := gobuild.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*gobuild.NoGoError); ok {
				return nil
			}
			return err
		}
		allowed, ok := rooms[rel]
		if !ok {
			t.Errorf("package %s is in no room: add it to the table in docs/architecture.md and to rooms in cmd/locklab/rooms_test.go", rel)
			return nil
		}
		for _, imp := range pkg.Imports {
			if inner, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(allowed, inner) {
				t.Errorf("%s imports %s, which its room may not (docs/architecture.md, \"Rooms and what they may import\")", rel, inner)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
