//go:build !unix

package locktest

import "time"

// processCPU is not measured here: the benchmarks report runs/s only.
func processCPU() time.Duration { return 0 }
