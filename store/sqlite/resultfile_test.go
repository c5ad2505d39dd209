package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mgrpo/mgrpo/store"
)

// results returns every result ScanResults gives for step 1 of run r.
func results(t *testing.T, s store.Store) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := s.ScanResults(context.Background(), "r", 1, func(id string, v json.RawMessage) error {
		if _, dup := got[id]; dup {
			t.Errorf("task %s scanned twice", id)
		}
		got[id] = string(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// resultFile is the one result file of the store at path.
func resultFile(t *testing.T, path string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(path+".results", "*.log"))
	if err != nil || len(files) != 1 {
		t.Fatalf("result files %v (%v), want one", files, err)
	}
	return files[0]
}

// TestResultFileIgnoresUncommittedBytes checks that bytes a crashed writer
// left past a file's committed length are not results, and that the next
// batch writes over them.
func TestResultFileIgnoresUncommittedBytes(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	s := MustOpen(t, path)
	if err := s.PutResult(ctx, "r", 1, "a", json.RawMessage(`"first"`)); err != nil {
		t.Fatal(err)
	}
	file := resultFile(t, path)
	committed := readFile(t, file)
	// A batch written and never committed: a whole record of task "x".
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(committed)
	f.Close()
	if v, err := s.Result(ctx, "r", 1, "a"); err != nil || string(v) != `"first"` {
		t.Fatalf("Result(a) = %s, %v", v, err)
	}
	if n, err := s.CountResults(ctx, "r", 1); err != nil || n != 1 {
		t.Fatalf("CountResults = %d, %v; want 1", n, err)
	}
	if err := s.PutResult(ctx, "r", 1, "b", json.RawMessage(`"second"`)); err != nil {
		t.Fatal(err)
	}
	// A second Store (another process) reads what the first committed.
	other := MustOpen(t, path)
	for _, st := range []store.Store{s, other} {
		if got := results(t, st); len(got) != 2 || got["a"] != `"first"` || got["b"] != `"second"` {
			t.Errorf("results %v", got)
		}
	}
	// The first result of a task is kept.
	if err := other.PutResult(ctx, "r", 1, "a", json.RawMessage(`"again"`)); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Result(ctx, "r", 1, "a"); err != nil || string(v) != `"first"` {
		t.Fatalf("Result(a) after a second put = %s, %v", v, err)
	}
}

// TestResultFileDamagedRecord checks that a record whose bytes fail their
// checksum (file data a power failure lost) is a missing result, so its
// rollout is done again, not an error or a wrong value.
func TestResultFileDamagedRecord(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	s := MustOpen(t, path)
	for _, id := range []string{"a", "b"} {
		if err := s.PutResult(ctx, "r", 1, id, json.RawMessage(`"value of `+id+`"`)); err != nil {
			t.Fatal(err)
		}
	}
	file := resultFile(t, path)
	b := readFile(t, file)
	b[len(b)-3] ^= 0xff // inside b's value
	writeFile(t, file, b)
	fresh := MustOpen(t, path)
	if _, err := fresh.Result(ctx, "r", 1, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Result of the damaged record: %v, want store.ErrNotFound", err)
	}
	if v, err := fresh.Result(ctx, "r", 1, "a"); err != nil || string(v) != `"value of a"` {
		t.Errorf("Result(a) = %s, %v", v, err)
	}
	if got := results(t, fresh); len(got) != 1 || got["a"] == "" {
		t.Errorf("scan of a file with a damaged record: %v", got)
	}
}

// TestResultsOfAnOlderStore checks that results a store of schema version
// 6 kept in its table are read, counted, scanned once beside the file's
// and deleted with their step.
func TestResultsOfAnOlderStore(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	newStore(t, path)
	rawExec(t, path, `INSERT INTO results (run, step, task_id, result) VALUES ('r', 1, 'old', CAST('"from the table"' AS BLOB))`)
	s := MustOpen(t, path)
	for _, id := range []string{"new", "old"} {
		if err := s.PutResult(ctx, "r", 1, id, json.RawMessage(`"from the file"`)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := s.Result(ctx, "r", 1, "old"); err != nil || string(v) != `"from the table"` {
		t.Errorf("Result(old) = %s, %v", v, err)
	}
	if n, err := s.CountResults(ctx, "r", 1); err != nil || n != 2 {
		t.Errorf("CountResults = %d, %v; want 2", n, err)
	}
	if got := results(t, s); len(got) != 2 || got["old"] != `"from the table"` || got["new"] != `"from the file"` {
		t.Errorf("results %v", got)
	}
	if err := s.DeleteResults(ctx, "r", 1); err != nil {
		t.Fatal(err)
	}
	if got := results(t, s); len(got) != 0 {
		t.Errorf("results after DeleteResults: %v", got)
	}
	if files, _ := filepath.Glob(filepath.Join(path+".results", "*")); len(files) != 0 {
		t.Errorf("files left after DeleteResults: %v", files)
	}
}

// TestOrphanResultFilesSwept checks that Open removes a result file whose
// row a committed delete removed (the process died before the file), and
// keeps the files of live steps and of ids no commit has reached.
func TestOrphanResultFilesSwept(t *testing.T) {
	ctx := context.Background()
	path := tempPath(t)
	s := MustOpen(t, path)
	for step := 1; step <= 2; step++ {
		if err := s.PutResult(ctx, "r", step, "a", json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(path+".results", "*.log"))
	slices.Sort(files)
	if len(files) != 2 {
		t.Fatalf("files %v", files)
	}
	keep := readFile(t, files[0])
	if err := s.DeleteResults(ctx, "r", 1); err != nil {
		t.Fatal(err)
	}
	writeFile(t, files[0], keep)                                 // as if the removal never ran
	writeFile(t, filepath.Join(path+".results", "99.log"), keep) // a row not committed yet
	s.Close()
	s = MustOpen(t, path)
	for name, want := range map[string]bool{files[0]: false, files[1]: true, filepath.Join(path+".results", "99.log"): true} {
		if _, err := os.Stat(name); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
	if v, err := s.Result(ctx, "r", 2, "a"); err != nil || string(v) != `1` {
		t.Errorf("Result of the live step = %s, %v", v, err)
	}
}
