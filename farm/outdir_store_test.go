package farm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// TestCheckStoreHoldsRun: a resume whose store holds nothing of the run
// beside written step files (a Redis back empty) is refused pointing at
// --rebuild-store; --rebuild-store is refused where the store holds the
// run or there are no step files; all wrapping ErrRunMismatch.
func TestCheckStoreHoldsRun(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name             string
		storeSteps, dirs bool
		rebuild          bool
		want             string // "" for no error
	}{
		{name: "store lost the run beside steps", dirs: true, want: "add --rebuild-store"},
		{name: "rebuild a lost run", dirs: true, rebuild: true},
		{name: "resume a run the store holds", storeSteps: true, dirs: true},
		{name: "rebuild a run the store holds", storeSteps: true, dirs: true, rebuild: true, want: "has not lost the run"},
		{name: "rebuild without step files", rebuild: true, want: "no step directory"},
		{name: "resume a run killed before its first step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.dirs {
				if err := os.Mkdir(filepath.Join(out, "step-000001"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			st, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if tc.storeSteps {
				if err := st.CreateRun(ctx, store.RunRecord{ID: "r", Version: store.RunRecordVersion}); err != nil {
					t.Fatal(err)
				}
				if err := st.PutStep(ctx, "r", store.StepRecord{Step: 1, Status: store.StepWritten}); err != nil {
					t.Fatal(err)
				}
			}
			err = CheckStoreHoldsRun(ctx, st, "r", out, "sqlite://"+filepath.Join(dir, "store.db"), tc.rebuild)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrRunMismatch)):
				t.Errorf("error %v, want a configuration error containing %q", err, tc.want)
			}
		})
	}
}
