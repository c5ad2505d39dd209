package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartProfile checks that MGRPO_CPUPROFILE and MGRPO_HEAP_PEAK write
// their profiles, that an unusable path is said and ignored, and that
// without them nothing happens.
func TestStartProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.out")
	var stderr bytes.Buffer
	stop := startProfile(func(k string) string {
		if k == envCPUProfile {
			return path
		}
		return ""
	}, &stderr)
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Errorf("profile %s: %v (size %v), want a written profile", path, err, fi)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr %q, want nothing", stderr.String())
	}

	stderr.Reset()
	bad := filepath.Join(t.TempDir(), "missing", "cpu.out")
	startProfile(func(string) string { return bad }, &stderr)()
	if !strings.Contains(stderr.String(), envCPUProfile) {
		t.Errorf("stderr %q, want a message naming %s", stderr.String(), envCPUProfile)
	}

	stderr.Reset()
	heap := filepath.Join(t.TempDir(), "heap.out")
	startProfile(func(k string) string {
		if k == envHeapPeak {
			return heap
		}
		return ""
	}, &stderr)()
	if fi, err := os.Stat(heap); err != nil || fi.Size() == 0 {
		t.Errorf("heap profile %s: %v (size %v), want a written profile", heap, err, fi)
	}

	stderr.Reset()
	startProfile(func(string) string { return "" }, &stderr)()
	if stderr.Len() != 0 {
		t.Errorf("stderr %q without the variable, want nothing", stderr.String())
	}
}
