//go:build !linux

package benchproc

import (
	"testing"
	"time"
)

// ProcessCPU skips the benchmark: another process's CPU time is read from
// /proc, which this platform lacks.
func ProcessCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	tb.Skip("another process's CPU time is read from /proc (linux only)")
	return 0
}

// LoadAverage is 0: the load average is read from /proc.
func LoadAverage() float64 { return 0 }
