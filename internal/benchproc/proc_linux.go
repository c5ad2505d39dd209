//go:build linux

package benchproc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ProcessCPU returns the CPU time (user and system) process pid has used
// so far, read from /proc in clock ticks of 10 ms: for a benchmark's child
// process, whose getrusage figures come only once it has exited.
func ProcessCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("read the CPU time of process %d: %v", pid, err)
	}
	// The fields after the parenthesised command name: utime and stime
	// are the stat file's fields 14 and 15.
	rest := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(rest[11], 10, 64)
	st, _ := strconv.ParseInt(rest[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// LoadAverage is the machine's load average over the last minute (0 when
// it cannot be read): the benchmarks report it, since other work on a
// shared machine moves their latencies.
func LoadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
