package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/bench"
)

// twoEvals builds evals over 20 questions: A answers q00–q09, B answers q00–q15, so B is better by
// exactly 6/20 = 0.3 and never worse on any question. B also has one question A lacks.
func twoEvals() (a, b []bench.Result) {
	for i := range 20 {
		id := fmt.Sprintf("q%02d", i)
		a = append(a, bench.Result{ID: id, Correct: i < 10})
		b = append(b, bench.Result{ID: id, Correct: i < 16})
	}
	b = append(b, bench.Result{ID: "extra", Correct: true})
	return a, b
}

func TestCompareKnownDifference(t *testing.T) {
	a, b := twoEvals()
	c := Compare(a, b, CompareOptions{Seed: 1})
	if c.Common != 20 || c.OnlyA != 0 || c.OnlyB != 1 {
		t.Errorf("common/onlyA/onlyB = %d/%d/%d, want 20/0/1", c.Common, c.OnlyA, c.OnlyB)
	}
	if !near(c.AccuracyA, 0.5) || !near(c.AccuracyB, 0.8) || !near(c.Diff, 0.3) {
		t.Errorf("accuracy A %v B %v diff %v, want 0.5 0.8 0.3", c.AccuracyA, c.AccuracyB, c.Diff)
	}
	if len(c.Changed) != 6 || c.Changed[0].ID != "q10" || c.Changed[5].ID != "q15" {
		t.Errorf("changed = %+v, want q10–q15", c.Changed)
	}
	// Every paired difference is 0 or +1, so the interval lies in [0, 1] and must hold 0.3.
	if c.CI.Low < 0.05 || c.CI.High > 0.55 || c.CI.Low > 0.3 || c.CI.High < 0.3 || c.CI.Level != 0.95 {
		t.Errorf("CI = %+v, want around 0.3 within [0.05, 0.55]", c.CI)
	}
	if again := Compare(a, b, CompareOptions{Seed: 1}); again.CI != c.CI {
		t.Errorf("same seed gave %+v then %+v", c.CI, again.CI)
	}
	var sb strings.Builder
	if err := WriteComparison(&sb, c, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "diff (B−A): +0.3000") || !strings.Contains(sb.String(), "q10\t0.00 -> 1.00\t+1.00") {
		t.Errorf("comparison text:\n%s", sb.String())
	}
}

func TestPairedBootstrapConstant(t *testing.T) {
	ci := PairedBootstrap([]float64{0.5, 0.5, 0.5}, 1000, 0.9, 7)
	if !near(ci.Low, 0.5) || !near(ci.High, 0.5) {
		t.Errorf("constant diffs: CI = %+v, want [0.5, 0.5]", ci)
	}
	if ci := PairedBootstrap(nil, 1000, 0.95, 7); ci.Low != 0 || ci.High != 0 {
		t.Errorf("no diffs: CI = %+v, want zero", ci)
	}
}

func TestCompareDirs(t *testing.T) {
	a, b := twoEvals()
	dirA, dirB := t.TempDir(), t.TempDir()
	for dir, rs := range map[string][]bench.Result{dirA: a, dirB: b} {
		f, err := os.Create(filepath.Join(dir, ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if err := bench.WriteResult(f, r); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	c, err := CompareDirs(dirA, dirB, CompareOptions{Resamples: 2000, Seed: 3})
	if err != nil || !near(c.Diff, 0.3) {
		t.Fatalf("CompareDirs = %+v, %v", c.Diff, err)
	}
	if _, err := CompareDirs(dirA, t.TempDir(), CompareOptions{}); err == nil {
		t.Error("missing results.jsonl: want an error")
	}
}
