//go:build !unix

package benchproc

import (
	"testing"
	"time"
)

// Usage skips the benchmark: its CPU and memory figures come from
// getrusage, which this platform lacks.
func Usage(tb testing.TB) (cpu time.Duration, peakRSS int64) {
	tb.Helper()
	tb.Skip("process CPU time and peak RSS are read with getrusage (unix only)")
	return 0, 0
}

// switches is 0, 0: this platform's context switches are not read.
func switches(tb testing.TB) (voluntary, involuntary int64) { return 0, 0 }
