package sim

import (
	"hash/fnv"
	"math/rand/v2"
	"testing"
)

// fnv64a must be hash/fnv's FNV-1a: every message's draws in a bubble are
// seeded by it, and the golden digests of bubble scenarios were recorded
// with hash/fnv.
func TestFNV64aIsHashFNV(t *testing.T) {
	for _, s := range []string{"", "a", "n1<c1 request SET lock … @c c1>n1#0#1", "process c3", "\xff\x00é"} {
		h := fnv.New64a()
		h.Write([]byte(s))
		if got, want := fnv64a(s), h.Sum64(); got != want {
			t.Errorf("fnv64a(%q) = %x, want %x", s, got, want)
		}
	}
}

// A reused message source draws what a fresh contentRand draws, also
// when one message's draws nest inside another's.
func TestMessageRandDrawsAsContentRand(t *testing.T) {
	w := &World{Seed: 7}
	b := &bubble{w: w}
	w.rt = b
	w.rng = rand.New(rand.NewPCG(1, 2))
	kernel := w.rng
	draw := func(key string) [3]uint64 {
		r := w.contentRand(key)
		return [3]uint64{r.Uint64(), r.Uint64(), r.Uint64()}
	}
	for _, key := range []string{"a", "b", "a"} {
		saved := b.messageRand(key)
		outer := w.rng.Uint64()
		savedInner := b.messageRand(key + "/inner")
		inner := [3]uint64{w.rng.Uint64(), w.rng.Uint64(), w.rng.Uint64()}
		b.endMessageRand(savedInner)
		rest := [2]uint64{w.rng.Uint64(), w.rng.Uint64()}
		b.endMessageRand(saved)
		if want := draw(key); [3]uint64{outer, rest[0], rest[1]} != want {
			t.Errorf("%s: drew %v %v, want %v", key, outer, rest, want)
		}
		if want := draw(key + "/inner"); inner != want {
			t.Errorf("%s/inner: drew %v, want %v", key, inner, want)
		}
		if w.rng != kernel || b.msgDepth != 0 {
			t.Fatalf("%s: the world's source was not given back", key)
		}
	}
}
