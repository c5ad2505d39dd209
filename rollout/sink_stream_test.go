package rollout

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// splitStep cuts files into pieces of at most n rows of each kind.
func splitStep(files StepFiles, n int) []StepFiles {
	var out []StepFiles
	for i := 0; ; i += n {
		var p StepFiles
		p.Planner = window(files.Planner, i, n)
		p.Executor = window(files.Executor, i, n)
		p.Stats = window(files.Stats, i, n)
		p.Rollouts = window(files.Rollouts, i, n)
		if len(p.Planner)+len(p.Executor)+len(p.Stats)+len(p.Rollouts) == 0 {
			return out
		}
		out = append(out, p)
	}
}

func window[T any](s []T, i, n int) []T {
	if i >= len(s) {
		return nil
	}
	return s[i:min(i+n, len(s))]
}

func TestStepWriterPiecesMatchWholeStep(t *testing.T) {
	files := exampleStep(t)
	for _, parquet := range []bool{false, true} {
		whole, pieces := t.TempDir(), t.TempDir()
		if err := (DirSink{Dir: whole, Parquet: parquet}).WriteStep(context.Background(), 1, files); err != nil {
			t.Fatal(err)
		}
		w, err := DirSink{Dir: pieces, Parquet: parquet}.BeginStep(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range splitStep(files, 1) {
			if err := w.Append(context.Background(), p); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, name := range jsonlFiles {
			a, _ := os.ReadFile(filepath.Join(StepDir(whole, 1), name))
			b, _ := os.ReadFile(filepath.Join(StepDir(pieces, 1), name))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("parquet=%v: %s appended row by row differs from the step written whole (%d vs %d bytes)", parquet, name, len(b), len(a))
			}
		}
		if parquet {
			checkParquetMatchesJSONL(t, StepDir(pieces, 1))
		}
		if _, err := (DirSink{Dir: pieces}).BeginStep(context.Background(), 1); !errors.Is(err, ErrStepExists) {
			t.Errorf("BeginStep of a written step: %v, want ErrStepExists", err)
		}
	}
}

func TestStepWriterAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	w, err := DirSink{Dir: dir}.BeginStep(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(context.Background(), exampleStep(t)); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("an aborted step left %v", entries)
	}
	if err := w.Commit(context.Background()); err == nil {
		t.Error("Commit after Abort succeeded")
	}
}

func TestRemoveTempSteps(t *testing.T) {
	dir := t.TempDir()
	// A writer never committed stands for a process killed mid-write.
	if _, err := (DirSink{Dir: dir}).BeginStep(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if err := (DirSink{Dir: dir}).WriteStep(context.Background(), 1, exampleStep(t)); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveTempSteps(dir)
	if err != nil || len(removed) != 1 {
		t.Fatalf("RemoveTempSteps = %v, %v; want the one leftover", removed, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "step-000001" {
		t.Errorf("after RemoveTempSteps the directory holds %v, want step-000001 only", entries)
	}
}
