//go:build race

package reports

// raceEnabled: the race detector slows simulated runs about fifteenfold, so
// tests that run many of them take a fixed sample under -race.
const raceEnabled = true
