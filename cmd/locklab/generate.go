package main

// Derived files come from one command, `go generate ./...` at the
// repository's root (docs/architecture.md, "Derived files"):
//
//   - runner/testdata/golden-traces.txt, the catalogue's trace digests
//     (runs every catalogue scenario: the slow one);
//   - README.md's library tables: locktest's (TestLibraryTable) and the
//     go-zookeeper × fault table (TestGoZookeeperLockFaultTable);
//   - README.md's catalogue table and the `locklab help` texts in
//     docs/cli.md and docs/scenario-format.md, between their markers
//     (derived_test.go, which also checks them all fast).
//
//go:generate go test -count=1 -timeout 30m -run ^TestGoldenTraces$ ../../runner -update
//go:generate go test -count=1 -timeout 30m -run ^TestLibraryTable$ ../../locktest -locktest.update-table
//go:generate go test -count=1 -timeout 30m -run ^TestGoZookeeperLockFaultTable$ ../../algorithms/zklock/gozk -gozk.update-table
//go:generate go test -count=1 -run ^TestDerivedFiles$ . -derived.update
