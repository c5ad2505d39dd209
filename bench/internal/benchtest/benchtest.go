// Package benchtest holds test helpers shared by the bench packages.
package benchtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// SharedData returns the path of a file under the project's shared benchmark data folder
// (../shared/data relative to the repository root), skipping the test with a message when the folder
// is absent.
func SharedData(tb testing.TB, rel string) string {
	tb.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		tb.Skip("shared data: cannot locate the repository")
	}
	// here is <repo>/bench/internal/benchtest/benchtest.go.
	repo := filepath.Join(filepath.Dir(here), "..", "..", "..")
	dir := filepath.Join(repo, "..", "shared", "data")
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("shared benchmark data not found at %s (%v); skipping", dir, err)
	}
	p := filepath.Join(dir, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared benchmark file %s not found (%v); skipping", p, err)
	}
	return p
}
