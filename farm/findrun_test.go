package farm

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// TestFindRun: a named run is found or refused by name; without a name the
// store's only run is taken, and no run or several are refused, naming
// them, as ErrNoRun.
func TestFindRun(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := FindRun(ctx, st, ""); !errors.Is(err, ErrNoRun) || !strings.Contains(err.Error(), "holds no run yet") {
		t.Errorf("empty store: %v", err)
	}
	for _, id := range []string{"b", "a"} {
		if err := st.CreateRun(ctx, store.RunRecord{ID: id, Version: store.RunRecordVersion}); err != nil {
			t.Fatal(err)
		}
		if id == "b" {
			if rec, err := FindRun(ctx, st, ""); err != nil || rec.ID != "b" {
				t.Errorf("the only run: %v, %v", rec.ID, err)
			}
		}
	}
	if _, err := FindRun(ctx, st, ""); !errors.Is(err, ErrNoRun) || !strings.Contains(err.Error(), "2 runs (a, b)") {
		t.Errorf("two runs: %v", err)
	}
	if rec, err := FindRun(ctx, st, "a"); err != nil || rec.ID != "a" {
		t.Errorf("run a: %v, %v", rec.ID, err)
	}
	if _, err := FindRun(ctx, st, "zz"); !errors.Is(err, ErrNoRun) || !strings.Contains(err.Error(), `--run "zz"`) {
		t.Errorf("unknown run: %v", err)
	}
}
