package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// envCPUProfile names the file a CPU profile of the whole process is written
// to, from its start to its exit: a developer's knob for the one-shot
// benchmark (docs/benchmarks.md), not a flag users see.
const envCPUProfile = "MGRPO_CPUPROFILE"

// startProfile starts the CPU profile envCPUProfile asks for, if any, and
// returns the function that ends it; a profile that cannot start is said on
// stderr and the command runs without it.
func startProfile(getenv func(string) string, stderr io.Writer) (stop func()) {
	path := getenv(envCPUProfile)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mgrpo: %s: %v\n", envCPUProfile, err)
		if f != nil {
			f.Close()
		}
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
