package rollout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// SummaryFile is the run-level file of step summaries, one JSON line per
// completed step in step order, beside the step directories.
const SummaryFile = "summary.jsonl"

// WriteSummary records sum as the line of step sum.Step in
// Dir/summary.jsonl: the file is read, the step's line added or replaced,
// and the whole file written through a temporary file that is synced and
// renamed into place, so it always holds complete lines in step order and
// writing a step's summary again does not duplicate it. A run's farm calls
// it once per step right after WriteStep, so the file follows the run as it
// goes.
func (s DirSink) WriteSummary(ctx context.Context, sum StepSummary) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("write summary of step %d: %w", sum.Step, err)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("write summary of step %d: %w", sum.Step, err)
	}
	path := filepath.Join(s.Dir, SummaryFile)
	sums, err := readJSONL[StepSummary](path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write summary of step %d: %w", sum.Step, err)
	}
	sums = slices.DeleteFunc(sums, func(o StepSummary) bool { return o.Step == sum.Step })
	sums = append(sums, sum)
	slices.SortStableFunc(sums, func(a, b StepSummary) int { return cmp.Compare(a.Step, b.Step) })
	if err := writeFileAtomic(path, func(w io.Writer) error { return writeJSONL(w, sums) }); err != nil {
		return fmt.Errorf("write summary of step %d: %w", sum.Step, err)
	}
	return nil
}

// ReadSummaries reads a run's summary.jsonl.
func ReadSummaries(path string) ([]StepSummary, error) { return readJSONL[StepSummary](path) }
