//go:build !unix

package farm

// processAlive reports a process as alive where this build cannot tell:
// its run lock then goes stale only after its lease.
func processAlive(int) bool { return true }
