package report

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/mgrpo/mgrpo/bench"
)

// Comparison is the per-question difference between two evals of the same benchmark.
type Comparison struct {
	// Common counts the questions present in both evals; only they are compared.
	Common int `json:"common"`
	OnlyA  int `json:"only_a"`
	OnlyB  int `json:"only_b"`
	// AccuracyA and AccuracyB are the mean per-question accuracies (correct runs / runs) over the
	// common questions; Diff is AccuracyB − AccuracyA.
	AccuracyA float64 `json:"accuracy_a"`
	AccuracyB float64 `json:"accuracy_b"`
	Diff      float64 `json:"diff"`
	// CI is the paired bootstrap confidence interval of Diff.
	CI Interval `json:"ci"`
	// Changed lists the questions whose accuracy differs, largest change first.
	Changed []QuestionDiff `json:"changed"`
}

// QuestionDiff is one question's accuracy in each eval.
type QuestionDiff struct {
	ID        string  `json:"id"`
	AccuracyA float64 `json:"accuracy_a"`
	AccuracyB float64 `json:"accuracy_b"`
}

// CompareOptions tunes the bootstrap.
type CompareOptions struct {
	// Resamples is the number of bootstrap resamples; 0 means 10,000.
	Resamples int
	// Level is the confidence level; 0 means 0.95.
	Level float64
	// Seed seeds the bootstrap generator.
	Seed uint64
}

// CompareDirs compares dirA/results.jsonl with dirB/results.jsonl.
func CompareDirs(dirA, dirB string, opts CompareOptions) (Comparison, error) {
	a, err := bench.ReadResultsFile(filepath.Join(dirA, ResultsFile))
	if err != nil {
		return Comparison{}, err
	}
	b, err := bench.ReadResultsFile(filepath.Join(dirB, ResultsFile))
	if err != nil {
		return Comparison{}, err
	}
	return Compare(a, b, opts), nil
}

// Compare pairs results by question id and compares per-question accuracy.
func Compare(a, b []bench.Result, opts CompareOptions) Comparison {
	if opts.Resamples == 0 {
		opts.Resamples = 10000
	}
	if opts.Level == 0 {
		opts.Level = 0.95
	}
	accA, accB := perQuestion(a), perQuestion(b)
	var c Comparison
	var ids []string
	for id := range accA {
		if _, ok := accB[id]; ok {
			ids = append(ids, id)
		} else {
			c.OnlyA++
		}
	}
	for id := range accB {
		if _, ok := accA[id]; !ok {
			c.OnlyB++
		}
	}
	sort.Strings(ids)
	c.Common = len(ids)
	diffs := make([]float64, len(ids))
	for i, id := range ids {
		x, y := accA[id], accB[id]
		c.AccuracyA += x
		c.AccuracyB += y
		diffs[i] = y - x
		if x != y {
			c.Changed = append(c.Changed, QuestionDiff{ID: id, AccuracyA: x, AccuracyB: y})
		}
	}
	if c.Common > 0 {
		c.AccuracyA /= float64(c.Common)
		c.AccuracyB /= float64(c.Common)
	}
	c.Diff = c.AccuracyB - c.AccuracyA
	sort.SliceStable(c.Changed, func(i, j int) bool {
		di := c.Changed[i].AccuracyB - c.Changed[i].AccuracyA
		dj := c.Changed[j].AccuracyB - c.Changed[j].AccuracyA
		if abs(di) != abs(dj) {
			return abs(di) > abs(dj)
		}
		return c.Changed[i].ID < c.Changed[j].ID
	})
	c.CI = PairedBootstrap(diffs, opts.Resamples, opts.Level, opts.Seed)
	return c
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// perQuestion maps each question id to its share of correct results.
func perQuestion(rs []bench.Result) map[string]float64 {
	correct, total := map[string]int{}, map[string]int{}
	for _, r := range rs {
		total[r.ID]++
		if r.Outcome() == bench.OutcomeCorrect {
			correct[r.ID]++
		}
	}
	out := make(map[string]float64, len(total))
	for id, n := range total {
		out[id] = float64(correct[id]) / float64(n)
	}
	return out
}

// WriteComparison prints c as text: the headline difference with its
// interval, then the changed questions, largest change first, at most limit
// of them (limit ≤ 0: all), and how many more there are.
func WriteComparison(w io.Writer, c Comparison, limit int) error {
	if _, err := fmt.Fprintf(w, "questions compared: %d (only in A: %d, only in B: %d)\naccuracy A: %.4f  B: %.4f  diff (B−A): %+.4f  %.0f%% CI [%+.4f, %+.4f]\n",
		c.Common, c.OnlyA, c.OnlyB, c.AccuracyA, c.AccuracyB, c.Diff, 100*c.CI.Level, c.CI.Low, c.CI.High); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "changed questions: %d\n", len(c.Changed)); err != nil {
		return err
	}
	shown := c.Changed
	if limit > 0 && len(shown) > limit {
		shown = shown[:limit]
	}
	for _, q := range shown {
		if _, err := fmt.Fprintf(w, "%s\t%.2f -> %.2f\t%+.2f\n", q.ID, q.AccuracyA, q.AccuracyB, q.AccuracyB-q.AccuracyA); err != nil {
			return err
		}
	}
	if more := len(c.Changed) - len(shown); more > 0 {
		if _, err := fmt.Fprintf(w, "… and %d more (--limit 0 lists all, --json prints every one)\n", more); err != nil {
			return err
		}
	}
	return nil
}
