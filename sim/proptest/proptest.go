// Package proptest fixes how the project's rapid properties are seeded, so
// that a CI run is a repeatable check and not a lottery (issue 19): a
// property that is false must fail on every run of the same tree, not on
// one run in fifty.
//
// A package with rapid properties calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { proptest.Main(m, 0) }
//
// Then, unless -rapid.seed is given on the command line:
//   - by default rapid starts from Seed (or from LOCKLAB_RAPID_SEED when it
//     is set), the same on every run;
//   - with LOCKLAB_DEEP=1 (what `bash scripts/test.sh --deep` sets) the seed
//     is LOCKLAB_RAPID_SEED if set, else a fresh one, and every property runs
//     ten times as many checks.
//
// The seed is printed at the start of the test binary's output (seen with
// -v, and on failure), and scripts/test.sh prints it before the suite, so a
// failure can always be replayed with -rapid.seed.
package proptest

import (
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// Seed is the pinned seed of the ordinary (CI) suite.
const Seed uint64 = 20261125

// Deep reports whether this is the deep (nightly) suite: LOCKLAB_DEEP=1,
// what `bash scripts/test.sh --deep` sets. Tests that check a claim over
// many seeds check it over the few that assert it in CI, and over all of
// them when Deep is true.
func Deep() bool { return os.Getenv("LOCKLAB_DEEP") == "1" }

// Main is Setup, then the tests, then exit.
func Main(m *testing.M, checks int) {
	Setup(checks)
	os.Exit(m.Run())
}

// Setup sets rapid's seed (and its number of checks per property: checks,
// or rapid's own default of 100 when checks <= 0) as the package comment
// says. It parses the command line, so it belongs in TestMain.
func Setup(checks int) {
	flag.Parse()
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	deep := Deep()
	if !given["rapid.checks"] {
		if checks <= 0 {
			checks = 100
		}
		if deep {
			checks *= 10
		}
		must(flag.Set("rapid.checks", strconv.Itoa(checks)))
	}
	if !given["rapid.seed"] {
		seed, why, err := pick(deep)
		if err != nil {
			fmt.Fprintln(os.Stderr, "proptest:", err)
			os.Exit(2)
		}
		must(flag.Set("rapid.seed", strconv.FormatUint(seed, 10)))
		fmt.Printf("rapid: seed %d (%s; replay with -rapid.seed=%d)\n", seed, why, seed)
	}
}

// pick chooses the seed: LOCKLAB_RAPID_SEED, else a fresh one for a deep
// run, else the pinned Seed.
func pick(deep bool) (uint64, string, error) {
	if s := os.Getenv("LOCKLAB_RAPID_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			return 0, "", fmt.Errorf("LOCKLAB_RAPID_SEED=%q: expected a positive whole number (rapid reads 0 as 'draw one')", s)
		}
		return n, "from LOCKLAB_RAPID_SEED", nil
	}
	if deep {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return 0, "", err
		}
		return binary.LittleEndian.Uint64(b[:])>>1 | 1, "drawn for a deep run", nil
	}
	return Seed, "pinned", nil
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
