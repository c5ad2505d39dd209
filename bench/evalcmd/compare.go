package evalcmd

import (
	"encoding/json"
	"errors"
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
	// Warn, when set, receives a warning when the evals share few
	// questions, or not all of them.
	Warn func(string)
}

// ErrNothingInCommon is the error of a comparison of two evals with no
// question in common: there is nothing to compare (a bad command line).
var ErrNothingInCommon = errors.New("no question in common")

// minCommon is the number of common questions below which a comparison's
// interval is said to be of little use.
const minCommon = 10

// Compare runs `mgrpo eval compare`: it pairs the questions of dirA/results.jsonl and
// dirB/results.jsonl and prints the accuracy difference (B − A) with its paired bootstrap interval and
// the questions whose accuracy changed.
func Compare(dirA, dirB string, opts CompareOptions, stdout io.Writer) error {
	c, err := report.CompareDirs(dirA, dirB, report.CompareOptions{Resamples: opts.Resamples, Level: opts.Level, Seed: opts.Seed})
	if err != nil {
		return fmt.Errorf("eval compare: %w", err)
	}
	if c.Common == 0 {
		return fmt.Errorf("eval compare: %w: %s has %d question(s), %s has %d, none in common: compare evals of the same benchmark and questions (same --data, --limit and filters)",
			ErrNothingInCommon, dirA, c.OnlyA, dirB, c.OnlyB)
	}
	if few := c.Common < minCommon; few || c.OnlyA+c.OnlyB > 0 {
		if log := opts.Warn; log != nil {
			log(fmt.Sprintf("eval compare: %d question(s) in common (%d only in %s, %d only in %s): only they are compared%s",
				c.Common, c.OnlyA, dirA, c.OnlyB, dirB, map[bool]string{true: "; too few for a meaningful interval", false: ""}[few]))
		}
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
