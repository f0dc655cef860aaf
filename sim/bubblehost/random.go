package bubblehost

import "testing/cryptotest"

// SeedCryptoRandom makes crypto/rand, for the whole process, a
// deterministic stream drawn from seed, until the host ends (the
// program, or the test that called Bind). Libraries under test draw from
// crypto/rand (go-zookeeper names its protected znodes with 16 random
// bytes); with a seeded stream, and draws made in the order the
// simulation fixes, those names — and so the run's trace — replay byte
// for byte. Call it outside a bubble, before Run; it returns ErrNoHost
// without a host. Bubbles run one at a time, so runs do not share the
// stream.
func SeedCryptoRandom(seed uint64) error {
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) == 0 {
		return ErrNoHost
	}
	cryptotest.SetGlobalRandom(hosts[len(hosts)-1], seed)
	return nil
}
