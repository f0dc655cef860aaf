package explore

import (
	"testing"

	"github.com/locklab/locklab/sim/proptest"
)

// TestMain runs the package's rapid properties from a pinned, printed seed
// (a deep run draws a new one): see package proptest.
func TestMain(m *testing.M) { proptest.Main(m, 0) }
