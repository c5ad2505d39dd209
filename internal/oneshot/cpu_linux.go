//go:build linux

package oneshot

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is USER_HZ, the unit of /proc/PID/stat's CPU times (100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// ProcCPU returns the user and system CPU time process pid has used so far,
// all its threads included, from /proc/PID/stat (in clock ticks of 10 ms).
func ProcCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read cpu of %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields 14 and 15 (utime, stime) count from after its closing one.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("read cpu of %d: malformed stat", pid)
	}
	f := bytes.Fields(raw[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("read cpu of %d: malformed stat", pid)
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read cpu of %d: malformed stat", pid)
	}
	return time.Duration(utime+stime) * clockTick, nil
}
