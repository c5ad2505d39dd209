package evalcmd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
)

func writeResults(t *testing.T, dir string, ids ...string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, report.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, id := range ids {
		if err := bench.WriteResult(f, bench.Result{ID: id, Correct: i%2 == 0}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCompareNeedsQuestionsInCommon(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	writeResults(t, dirA, "a1", "a2", "a3")
	writeResults(t, dirB, "b1", "b2")
	var out strings.Builder
	err := Compare(dirA, dirB, CompareOptions{Seed: 1}, &out)
	if !errors.Is(err, ErrNothingInCommon) || !strings.Contains(err.Error(), "has 3 question(s)") || !strings.Contains(err.Error(), "has 2, none in common") {
		t.Fatalf("err %v, want ErrNothingInCommon with both counts", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed accuracies of nothing:\n%s", out.String())
	}
	// Few in common: compared, with a warning.
	writeResults(t, dirB, "a1", "a2", "b1")
	var warned []string
	if err := Compare(dirA, dirB, CompareOptions{Seed: 1, Warn: func(s string) { warned = append(warned, s) }}, &out); err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "2 question(s) in common") || !strings.Contains(warned[0], "too few") {
		t.Errorf("warnings %q, want one saying 2 in common, too few", warned)
	}
}
