package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestTrainSimCheckpointsRepeat runs the same train --sim command twice and
// checks that the sim trainer saved byte-identical files: the same batches
// give bit-identical parameters, whatever order the rollouts finished in.
// (With --max-staleness 1 the batches are the same too, since the rollouts
// are pinned to their versions: TestTrainSimAsyncRepeats.)
func TestTrainSimCheckpointsRepeat(t *testing.T) {
	if testing.Short() {
		t.Skip("trains in the sim world twice")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	runs := make([]map[string][]byte, 2)
	batches := make([][]byte, 2)
	for i := range runs {
		if code, _, stderr := runCLI(t, "train", "--sim", "--seed", "3", "--steps", "3", "--batch-size", "4", "--group-size", "4", "--out", out, "--mode", "mgrpo"); code != 0 {
			t.Fatalf("run %d: exit %d:\n%s", i, code, stderr)
		}
		for step := 1; step <= 3; step++ {
			for _, role := range []string{"planner", "executor"} {
				b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("step-%06d", step), role+".jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				batches[i] = append(batches[i], b...)
			}
		}
		runs[i] = map[string][]byte{}
		root := filepath.Join(out, "sim-checkpoints")
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			rel, _ := filepath.Rel(root, path)
			runs[i][rel] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(batches[0], batches[1]) {
		// When another test holds the sim's usual ports, a run serves on
		// free ones, whose addresses reach the prompts: other batches.
		t.Skip("the two runs trained on different batches (the sim's usual ports were taken); nothing to compare")
	}
	if len(runs[0]) == 0 {
		t.Fatal("the sim trainer saved nothing under sim-checkpoints")
	}
	for name, b := range runs[0] {
		if c, ok := runs[1][name]; !ok || !bytes.Equal(b, c) {
			t.Errorf("%s differs between two runs of the same command", name)
		}
	}
	if len(runs[1]) != len(runs[0]) {
		t.Errorf("the runs saved %d and %d files", len(runs[0]), len(runs[1]))
	}
}
