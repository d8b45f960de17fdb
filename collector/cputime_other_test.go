//go:build !unix

package collector

import "time"

// cpuTime is not read here: benchmarks report wall time only.
func cpuTime() time.Duration { return 0 }
