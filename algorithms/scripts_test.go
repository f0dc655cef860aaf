package algorithms

import (
	"testing"

	"github.com/locklab/locklab/sim"
)

// The simulator runs these scripts natively only if their text is exactly
// the one it knows; a drift here would silently make every run 60x slower.
func TestScriptsHaveNativeFastPath(t *testing.T) {
	for _, c := range []struct{ name, ours, sim string }{
		{"compare-and-delete", compareAndDelete, sim.ScriptCompareAndDelete},
		{"compare-and-pexpire", compareAndPExpire, sim.ScriptCompareAndPExpire},
		{"reentrant-acquire", reentrantAcquire, sim.ScriptReentrantAcquire},
		{"reentrant-release", reentrantRelease, sim.ScriptReentrantRelease},
		{"reentrant-renew", reentrantRenew, sim.ScriptReentrantRenew},
	} {
		if c.ours != c.sim {
			t.Errorf("%s: algorithm script differs from sim's native script", c.name)
		}
	}
}
