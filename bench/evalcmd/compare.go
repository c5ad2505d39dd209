package evalcmd

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/mgrpo/mgrpo/bench/report"
)

// CompareOptions are the flags of `mgrpo eval compare DIR_A DIR_B`.
type CompareOptions struct {
	// Resamples is the number of bootstrap resamples (--resamples, default 10000).
	Resamples int
	// Level is the confidence level (--confidence, default 0.95).
	Level float64
	// Seed seeds the bootstrap (--seed, default 1 in cmd; any fixed value gives reproducible output).
	Seed uint64
	// JSON prints the comparison as JSON instead of text (--json), with
	// every changed question.
	JSON bool
	// Limit caps the changed questions listed as text (--limit, default
	// 20 in cmd); 0 lists all.
	Limit int
}

// Compare runs `mgrpo eval compare`: it pairs the questions of dirA/results.jsonl and
// dirB/results.jsonl and prints the accuracy difference (B − A) with its paired bootstrap interval and
// the questions whose accuracy changed.
func Compare(dirA, dirB string, opts CompareOptions, stdout io.Writer) error {
	c, err := report.CompareDirs(dirA, dirB, report.CompareOptions{Resamples: opts.Resamples, Level: opts.Level, Seed: opts.Seed})
	if err != nil {
		return fmt.Errorf("eval compare: %w", err)
	}
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	}
	return report.WriteComparison(stdout, c, opts.Limit)
}

// Report rewrites summary.json, report.md and accuracy.svg of an eval directory from its
// results.jsonl (`mgrpo eval report DIR`) and prints the headline numbers.
func Report(dir string, stdout io.Writer) error {
	s, err := report.WriteDir(dir)
	if err != nil {
		return fmt.Errorf("eval report: %w", err)
	}
	o := s.Overall
	_, err = fmt.Fprintf(stdout, "questions %d, runs %d: avg pass@1 %.4f (std %.4f), pass@%d %.4f, best pass@1 %.4f, majority %.4f; errors %d, judge errors %d\n",
		o.Questions, o.Runs, o.AvgPass1, o.Std, o.K, o.PassK, o.BestPass1, o.MajorityVote, o.Errors, o.JudgeErrors)
	return err
}
