package farm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// OutDir says how a run is about to use its output directory.
type OutDir struct {
	// Dir is the output directory.
	Dir string
	// Resume continues the run in Dir; Rebuild (--rebuild-store) rebuilds
	// its store from the step files; Force writes a new run among files
	// that are not a run's.
	Resume, Rebuild, Force bool
	// RunDirStore says the run's store is Dir's own store.db; StoreFile is
	// the file of another sqlite:// store ("" for another store).
	RunDirStore bool
	StoreFile   string
	// Own are further names the run writes into Dir beside its steps,
	// summary, store and tasks (the sim trainer's checkpoints).
	Own []string
}

// Check checks the output directory before anything is written: steps
// are never overwritten, a run is never written among files that are not
// a run's (unless Force), and Resume needs a run to continue (when the
// run's store is the directory's own store.db). A resumed run whose step
// files are written needs its SQLite store to exist and not be empty,
// wherever it is, unless Rebuild rebuilds it.
func (o OutDir) Check() error {
	out := o.Dir
	entries, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) {
		if o.Resume && o.RunDirStore {
			return fmt.Errorf("--resume: --out %s does not exist, so there is no run to continue: check the path, or start the run without --resume", out)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	var steps, foreign []string
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasPrefix(name, "step-"):
			steps = append(steps, name)
		case !o.isRunEntry(name):
			foreign = append(foreign, name)
		}
	}
	if o.Resume {
		return o.checkResume(steps)
	}
	if len(steps) > 0 {
		return fmt.Errorf("--out %s already holds %s: continue that run with --resume, or choose a new --out (steps are never overwritten)", out, steps[0])
	}
	if len(foreign) > 0 && !o.Force {
		return fmt.Errorf("--out %s is not empty and holds files that are not a run's (%s): choose a new or empty directory, or pass --force to write the run beside them", out, strings.Join(foreign[:min(len(foreign), 3)], ", "))
	}
	return nil
}

// checkResume checks that a resumed run's store is there beside its
// written steps.
func (o OutDir) checkResume(steps []string) error {
	out, storeFile := o.Dir, o.StoreFile
	if o.RunDirStore {
		storeFile = filepath.Join(out, StoreFile)
	}
	if storeFile == "" || o.Rebuild && len(steps) > 0 {
		return nil
	}
	info, err := os.Stat(storeFile)
	switch {
	case err != nil && len(steps) == 0 && o.RunDirStore:
		return fmt.Errorf("--resume: --out %s holds no run (no %s, no step directory): check the path, or start the run without --resume", out, StoreFile)
	case err != nil && len(steps) > 0:
		name := storeFile
		if o.RunDirStore {
			name = StoreFile
		}
		return fmt.Errorf("--resume: --out %s holds %d step(s) but no %s: the run's store is gone, so its finished rollouts cannot be told apart from the rest; add --rebuild-store to rebuild the store from the step files, or start a new run in a new --out", out, len(steps), name)
	case err == nil && info.Size() == 0 && len(steps) > 0:
		return fmt.Errorf("--resume: %s is empty (0 bytes) beside %d written step(s) in --out %s: the run's store was lost, and resuming would redo rollouts whose steps are written; add --rebuild-store to rebuild the store from the step files, or start a new run in a new --out", storeFile, len(steps), out)
	}
	return nil
}

// isRunEntry reports whether name is something a run writes into its
// directory besides its step directories.
func (o OutDir) isRunEntry(name string) bool {
	switch name {
	case rollout.SummaryFile, StoreFile, StoreFile + "-wal", StoreFile + "-shm", StoreFile + "-journal",
		StoreFile + ".results", "tasks.jsonl", "curves.svg":
		return true
	}
	for _, own := range o.Own {
		if name == own {
			return true
		}
	}
	// Temporary files and directories of a step or a summary being written.
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// RemoveUnlessStarted returns a function that removes what a run creates
// in out before its first rollout — out itself when the run created it,
// else its store.db (when storeElsewhere is false) — unless *started was
// set by then.
func RemoveUnlessStarted(out string, storeElsewhere bool, started *bool) func() {
	outExisted := fileExists(out)
	storePath := filepath.Join(out, StoreFile)
	storeExisted := storeElsewhere || fileExists(storePath)
	return func() {
		switch {
		case *started:
		case !outExisted:
			os.RemoveAll(out)
		case !storeExisted:
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				os.Remove(storePath + suffix)
			}
			// The results of the steps in progress (store/sqlite).
			os.RemoveAll(storePath + ".results")
		}
	}
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ErrRunMismatch marks a resume whose store and out directory tell
// different stories (CheckStoreHoldsRun); its message is its cause's.
var ErrRunMismatch = errors.New("the run's store and its out directory disagree")

// mismatchError is an ErrRunMismatch whose message is its cause's.
type mismatchError struct{ err error }

func (e mismatchError) Error() string   { return e.err.Error() }
func (e mismatchError) Unwrap() []error { return []error{e.err, ErrRunMismatch} }

// CheckStoreHoldsRun checks, for a resume of run in out from the store at
// storeURL, that the store and the out directory tell the same story: a
// store holding nothing of the run beside written step files lost it (a
// Redis back without its data, a store file replaced), and resuming would
// redo the written steps' rollouts, so it is refused unless rebuild
// (--rebuild-store); rebuild in turn needs a store without the run's steps
// and step files to rebuild from. Those refusals wrap ErrRunMismatch.
func CheckStoreHoldsRun(ctx context.Context, st store.Store, run, out, storeURL string, rebuild bool) error {
	steps, err := st.Steps(ctx, run)
	if err != nil {
		return fmt.Errorf("--resume: the run's store: %w", err)
	}
	dirs := stepDirs(out)
	url := redact.URL(storeURL)
	switch {
	case rebuild && len(steps) > 0:
		return mismatchError{fmt.Errorf("--rebuild-store: the run's store (%s) holds %d step record(s) of run %q, so it has not lost the run: resume without --rebuild-store", url, len(steps), run)}
	case rebuild && len(dirs) == 0:
		return mismatchError{fmt.Errorf("--rebuild-store: --out %s holds no step directory to rebuild the store from: resume without --rebuild-store", out)}
	case !rebuild && len(steps) == 0 && len(dirs) > 0:
		return mismatchError{fmt.Errorf("--resume: the run's store (%s) holds nothing of run %q while --out %s holds %d written step(s): the store lost the run (a Redis restarted without its data, or a store file replaced), and resuming would redo the written steps' rollouts; add --rebuild-store to rebuild the store's view from the step files (they are kept and not rerun), or start a new run in a new --out",
			url, run, out, len(dirs))}
	}
	return nil
}

// stepDirs returns the names of the step directories in out.
func stepDirs(out string) []string {
	entries, _ := os.ReadDir(out)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "step-") {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}
