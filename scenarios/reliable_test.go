package scenarios

import (
	"strings"
	"testing"
)

// resource.reliable spares the store; a fault that names the store in
// the same file contradicts it and is refused with its place.
func TestReliableResourceRefusesAFaultOnTheStore(t *testing.T) {
	const file = `id: spared
algorithm: set-nx-px-lua
ttl: 2s
nodes: [{name: A}]
clients: {count: 2}
resource: {initial: 100, reliable: true}
faults:
  - {kind: drop, node: store, count: 1}
`
	_, err := Parse("spared.yaml", []byte(file))
	if err == nil || !strings.Contains(err.Error(), "spared.yaml:8:") || !strings.Contains(err.Error(), "names the resource's host store, but resource.reliable is true") {
		t.Fatalf("want the drop on the store refused at line 8, got %v", err)
	}
	sc, err := Parse("spared.yaml", []byte(strings.Replace(file, "node: store", "node: A", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Resource.Reliable {
		t.Fatal("resource.reliable did not parse")
	}
}
