//go:build unix

package benchproc

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Usage returns this process's CPU time so far (user and system) and its
// peak resident set size in bytes.
func Usage(tb testing.TB) (cpu time.Duration, peakRSS int64) {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	rss := int64(ru.Maxrss)
	if runtime.GOOS != "darwin" {
		rss *= 1024 // kilobytes everywhere but macOS
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rss
}

// switches returns this process's voluntary and involuntary context
// switches so far, all threads counted.
func switches(tb testing.TB) (voluntary, involuntary int64) {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return int64(ru.Nvcsw), int64(ru.Nivcsw)
}
