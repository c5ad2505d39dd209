package web

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// testSeed is the seed of the shared test world.
const testSeed = 7

var (
	worldOnce sync.Once
	world     *World
	worldErr  error
)

// MustWorld returns the shared default world of testSeed, generated once.
func MustWorld(tb testing.TB) *World {
	tb.Helper()
	worldOnce.Do(func() { world, worldErr = Generate(Config{Seed: testSeed}) })
	if worldErr != nil {
		tb.Fatalf("Generate(seed %d): %v", testSeed, worldErr)
	}
	return world
}

// MustGenerate generates a world or fails the test.
func MustGenerate(tb testing.TB, cfg Config) *World {
	tb.Helper()
	w, err := Generate(cfg)
	if err != nil {
		tb.Fatalf("Generate(%+v): %v", cfg, err)
	}
	return w
}

// golden compares got with testdata/name, rewriting the file under -update.
// JSON is compared in indented form so diffs are readable.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	if json.Valid(got) {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err == nil {
			got = buf.Bytes()
		}
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}
