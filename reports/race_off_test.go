//go:build !race

package reports

const raceEnabled = false
