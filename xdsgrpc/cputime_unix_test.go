//go:build unix

package xdsgrpc_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used, user and system,
// on all its threads: client, backends and management server alike, as
// the engine's benchmarks measure it.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
