//go:build !linux

package oneshot

import (
	"errors"
	"time"
)

// ProcCPU is not available here: the benchmark reports totals only.
func ProcCPU(pid int) (time.Duration, error) {
	return 0, errors.New("a running process's cpu time is read from /proc (linux only)")
}
