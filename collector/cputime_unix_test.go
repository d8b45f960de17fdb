//go:build unix

package collector

import (
	"syscall"
	"time"
)

// cpuTime is the process's CPU time, user and system: what a benchmark
// costs whatever else the machine runs (a loaded machine stretches its
// wall time, not this).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
