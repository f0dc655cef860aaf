package locktest

import (
	"runtime/debug"
	"testing"
)

// A class explores at explorationGCPercent unless the user chose off or
// a higher target, and the user's target is back afterwards.
func TestExploreGCKeepsTheUsersChoice(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, c := range []struct{ user, during int }{{100, explorationGCPercent}, {50, explorationGCPercent}, {-1, -1}, {800, 800}} {
		debug.SetGCPercent(c.user)
		restore := exploreGC()
		during := debug.SetGCPercent(c.during)
		restore()
		after := debug.SetGCPercent(c.user)
		if during != c.during || after != c.user {
			t.Errorf("GOGC %d: %d while exploring and %d after; want %d and %d", c.user, during, after, c.during, c.user)
		}
	}
}
