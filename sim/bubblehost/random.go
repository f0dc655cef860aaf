package bubblehost

import (
	cryptorand "crypto/rand"
	"encoding/binary"
	"io"
	mathrand "math/rand/v2"
	"sync"
)

// Libraries under test draw from crypto/rand: go-zookeeper names its
// protected znodes with 16 bytes of io.ReadFull(rand.Reader, …), redsync
// draws its lock values with rand.Read (which reads Reader once Reader is
// not the default). Replaced by a stream drawn from the run's seed, and
// read in the order the simulation fixes, those bytes — and so the run's
// trace — replay byte for byte.
//
// testing/cryptotest.SetGlobalRandom does this in tests, but it panics in a
// program built with `go build` ("used in a non-test binary"): it checks
// testing.Testing, which only `go test`'s linker flag makes true. So the
// stream is made here, the way cryptotest makes it (ChaCha8 keyed with
// the seed's 8 little-endian bytes, then zeros), so that a run in the
// locklab command and the same run in a test draw the same bytes
// (TestSeededStreamIsCryptotests).

// seededReader is a deterministic stream, safe for the bubble's
// goroutines to share.
type seededReader struct {
	mu sync.Mutex
	r  *mathrand.ChaCha8
}

func newSeededReader(seed uint64) *seededReader {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:8], seed)
	return &seededReader{r: mathrand.NewChaCha8(key)}
}

func (s *seededReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Read(p)
}

// RunSeeded is Run with crypto/rand.Reader, for the code in the bubble,
// a deterministic stream drawn from seed. Bubbles of concurrent calls run
// side by side (explore's workers), so the Reader cannot simply be
// swapped: while any seeded bubble runs, Reader is a router that serves
// each read from the stream of the caller's bubble (every goroutine the
// bubble starts belongs to it), and reads from anywhere else from the
// previous Reader. The previous Reader is back when the last seeded bubble
// has ended. Code outside the bubbles must not replace Reader meanwhile.
func RunSeeded(seed uint64, fn func()) error {
	return run(fn, func(bubble string) func() { return seeded.enter(bubble, seed) })
}

// seeded routes crypto/rand reads to the stream of the reader's bubble.
var seeded bubbleStreams

type bubbleStreams struct {
	mu       sync.Mutex
	byBubble map[string]*seededReader
	previous io.Reader
}

func (b *bubbleStreams) enter(bubble string, seed uint64) (leave func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.byBubble) == 0 {
		// No seeded bubble runs: no goroutine of one reads Reader now.
		b.previous = cryptorand.Reader
		b.byBubble = map[string]*seededReader{}
		cryptorand.Reader = b
	}
	b.byBubble[bubble] = newSeededReader(seed)
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.byBubble, bubble)
		if len(b.byBubble) == 0 {
			cryptorand.Reader = b.previous
		}
	}
}

// Read serves p from the caller's bubble's stream. Finding the bubble
// costs a stack header (bubbleOf); libraries read crypto/rand a few times
// per lock, not per message.
func (b *bubbleStreams) Read(p []byte) (int, error) {
	bubble := bubbleOf()
	b.mu.Lock()
	r, ok := b.byBubble[bubble]
	previous := b.previous
	b.mu.Unlock()
	if !ok {
		return previous.Read(p)
	}
	return r.Read(p)
}

// SeedCryptoRandom makes crypto/rand.Reader, for the whole process, a
// deterministic stream drawn from seed, until the host ends (never, in a
// program; the end of the test that called Bind). It returns ErrNoHost
// without a host. Prefer RunSeeded: between this call and Run, another
// goroutine's run may seed the stream again or draw from it.
func SeedCryptoRandom(seed uint64) error {
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) == 0 {
		return ErrNoHost
	}
	previous := cryptorand.Reader
	cryptorand.Reader = newSeededReader(seed)
	hosts[len(hosts)-1].Cleanup(func() { cryptorand.Reader = previous })
	return nil
}
