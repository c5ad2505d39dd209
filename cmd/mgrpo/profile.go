package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/mgrpo/mgrpo/internal/heappeak"
)

// envCPUProfile names the file a CPU profile of the whole process is written
// to, from its start to its exit: a developer's knob for the one-shot
// benchmark (docs/benchmarks.md), not a flag users see.
const envCPUProfile = "MGRPO_CPUPROFILE"

// envHeapPeak names the file the heap profile at the process's highest heap
// (sampled every 500 ms) is written to at exit: the memory benchmark's knob
// (docs/benchmarks.md), to see what holds the peak RSS.
const envHeapPeak = "MGRPO_HEAP_PEAK"

// startProfile starts the profiles envCPUProfile and envHeapPeak ask for, if
// any, and returns the function that ends them; a profile that cannot be
// made is said on stderr and the command runs without it.
func startProfile(getenv func(string) string, stderr io.Writer) (stop func()) {
	stopCPU := startCPUProfile(getenv(envCPUProfile), stderr)
	stopHeap := func() {}
	if path := getenv(envHeapPeak); path != "" {
		watch := heappeak.Watch(path, 500*time.Millisecond)
		stopHeap = func() {
			if _, err := watch(); err != nil {
				fmt.Fprintf(stderr, "mgrpo: %s: %v\n", envHeapPeak, err)
			}
		}
	}
	return func() { stopCPU(); stopHeap() }
}

// startCPUProfile starts a CPU profile written to path, when path is set.
func startCPUProfile(path string, stderr io.Writer) (stop func()) {
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
