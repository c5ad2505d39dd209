//go:build unix

package farm

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process of this machine has the id pid
// (one of another user's counts: signal 0 is refused with EPERM).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
