package files

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// TestGoldenStepFiles pins the bytes of the hand-off format: a step of
// trainertest.GoldenBatch writes exactly testdata/golden/* (go test -update
// rewrites them).
func TestGoldenStepFiles(t *testing.T) {
	b := trainertest.GoldenBatch(t)
	root := t.TempDir()
	if _, err := New(root, trainerbridge.Options{}).Train(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	dir := StepDir(root, b.Role, b.Step)
	for _, name := range []string{ManifestFile, IndexFile, SequencesFile} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		trainertest.CheckGolden(t, filepath.Join("testdata", "golden", name), got, *update)
	}
}
