package farm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// rebuildSteps records in the store the steps written in dir, for a run
// the store lost: each step with a directory and a line in summary.jsonl
// gets its statistics from its stats.jsonl (what the other side's trainer
// reads from the store) and a written record with the summary's d̄ and
// rollouts, the d_k of its statistics (query after query, the plan's
// order: a later auto d̄ is resolved from them) and where its files are.
// A step directory without a summary line (the run was killed between the
// two) is left out: its rollouts are redone, with the same seeds, and its
// files kept as they are.
func (f *Farm) rebuildSteps(ctx context.Context, dir string) (map[int]store.StepRecord, error) {
	sums, err := rollout.ReadSummaries(filepath.Join(dir, rollout.SummaryFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("--rebuild-store: %w", err)
	}
	bySteps := map[int]rollout.StepSummary{}
	for _, s := range sums {
		bySteps[s.Step] = s // a later line of a step replaces an earlier one
	}
	written := map[int]store.StepRecord{}
	for _, step := range slices.Sorted(maps.Keys(bySteps)) {
		sum := bySteps[step]
		stepDir := rollout.StepDir(dir, step)
		if _, err := os.Stat(stepDir); err != nil {
			f.log.Warn("--rebuild-store: summary.jsonl names a step without its directory: it is run again", "step", step, "dir", stepDir)
			continue
		}
		stats, err := rollout.ReadStatsJSONL(filepath.Join(stepDir, rollout.StatsFile))
		if err != nil {
			return nil, fmt.Errorf("--rebuild-store: step %d: %w", step, err)
		}
		var d []int
		for _, q := range stats {
			d = append(d, q.D...)
		}
		if err := f.st.retry(ctx, fmt.Sprintf("store the statistics of step %d", step), func(ctx context.Context) error {
			return f.st.store.PutStats(ctx, f.cfg.Run, step, stats)
		}); err != nil {
			return nil, err
		}
		rec := store.StepRecord{Step: step, Status: store.StepWritten, Rollouts: sum.Rollouts, DBar: sum.DBar,
			ObservedD: d, Files: f.stepFiles(step), Summary: &sum}
		if err := f.st.retry(ctx, fmt.Sprintf("record step %d as written", step), func(ctx context.Context) error {
			return f.st.store.PutStep(ctx, f.cfg.Run, rec)
		}); err != nil {
			return nil, err
		}
		written[step] = rec
	}
	f.log.Info("rebuilt the store's view of the run from its step files", "run", f.cfg.Run, "dir", dir, "steps", len(written))
	return written, nil
}
