package farm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// RescoreChangesFile is the new run's per-step record of what the rescore
// changed (RescoreStep lines).
const RescoreChangesFile = "rescore.jsonl"

// RescoreDir says where a rescore writes its new run and how it opens the
// new run's store.
type RescoreDir struct {
	// Out is the new run's directory (it must not exist, or be empty);
	// From the recorded run's, whose tasks.jsonl is copied beside.
	Out, From string
	// Parquet writes Parquet copies of the step files.
	Parquet bool
	// Open opens the new run's store at a sqlite:// URL: the root's
	// backends.
	Open StoreOpener
	// Prepare finishes cfg once the new run's store is open (a judge whose
	// answers it caches); it returns what to close once the rescore ends.
	Prepare func(cfg *RescoreConfig, st store.Store) (closeFn func(), err error)
}

// RescoreInto runs Rescore into a new run directory: the steps, summaries,
// rollouts, the store (with the judge's answers cached), rescore.jsonl and
// the recorded tasks are written into a hidden directory beside d.Out and
// renamed into place at the end, so that a rescore that fails leaves
// nothing on disk.
func RescoreInto(ctx context.Context, cfg RescoreConfig, d RescoreDir) ([]RescoreStep, error) {
	out := filepath.Clean(d.Out)
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".rescore-")
	if err != nil {
		return nil, fmt.Errorf("rescore: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	dst, err := d.Open(ctx, "sqlite://"+filepath.ToSlash(filepath.Join(tmp, StoreFile)))
	if err != nil {
		return nil, fmt.Errorf("rescore: the new run's store: %w", err)
	}
	defer dst.Close()
	if d.Prepare != nil {
		closeFn, err := d.Prepare(&cfg, dst)
		if err != nil {
			return nil, err
		}
		defer closeFn()
	}
	cfg.Sink = rollout.DirSink{Dir: tmp, Parquet: d.Parquet}
	cfg.Store, cfg.FilesDir = dst, d.Out
	steps, err := Rescore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := d.finish(steps, tmp, dst); err != nil {
		return steps, err
	}
	done = true
	return steps, nil
}

// finish writes rescore.jsonl and the recorded tasks into tmp, closes the
// new run's store and renames tmp to d.Out.
func (d RescoreDir) finish(steps []RescoreStep, tmp string, dst store.Store) error {
	if err := WriteJSONLines(filepath.Join(tmp, RescoreChangesFile), steps); err != nil {
		return err
	}
	if err := CopyIfPresent(filepath.Join(d.From, "tasks.jsonl"), filepath.Join(tmp, "tasks.jsonl")); err != nil {
		return err
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("rescore: close the new run's store: %w", err)
	}
	os.Remove(d.Out) // an empty directory given as --out
	if err := os.Rename(tmp, d.Out); err != nil {
		return fmt.Errorf("rescore: %w", err)
	}
	return nil
}
