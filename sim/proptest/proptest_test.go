package proptest

import (
	"strings"
	"testing"
)

func TestPickPinsTheSeedUnlessAskedOtherwise(t *testing.T) {
	t.Setenv("LOCKLAB_RAPID_SEED", "")
	if seed, why, err := pick(false); err != nil || seed != Seed || why != "pinned" {
		t.Errorf("CI suite: seed %d (%s), %v; want the pinned %d", seed, why, err, Seed)
	}
	a, _, errA := pick(true)
	b, _, errB := pick(true)
	if errA != nil || errB != nil || a == 0 || a == b {
		t.Errorf("deep runs drew %d and %d (%v, %v); want two fresh non-zero seeds", a, b, errA, errB)
	}
	t.Setenv("LOCKLAB_RAPID_SEED", "42")
	for _, deep := range []bool{false, true} {
		if seed, why, err := pick(deep); err != nil || seed != 42 || !strings.Contains(why, "LOCKLAB_RAPID_SEED") {
			t.Errorf("deep=%v with LOCKLAB_RAPID_SEED=42: seed %d (%s), %v", deep, seed, why, err)
		}
	}
	for _, bad := range []string{"0", "-1", "many"} {
		t.Setenv("LOCKLAB_RAPID_SEED", bad)
		if _, _, err := pick(false); err == nil || !strings.Contains(err.Error(), "positive whole number") {
			t.Errorf("LOCKLAB_RAPID_SEED=%q: %v; want a refusal", bad, err)
		}
	}
}
