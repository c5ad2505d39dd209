package run

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/store"
)

// checkStoreHoldsRun checks, for a resume, that the run's store and its
// out directory tell the same story: a store holding nothing of the run
// beside written step files lost it (a Redis back without its data, a
// store file replaced), and resuming would redo the written steps'
// rollouts, so it is refused unless rebuild (--rebuild-store); rebuild in
// turn needs a store without the run's steps and step files to rebuild
// from. Errors wrap ErrConfig.
func checkStoreHoldsRun(ctx context.Context, st store.Store, cfg Config, rebuild bool) error {
	steps, err := st.Steps(ctx, cfg.Run)
	if err != nil {
		return fmt.Errorf("--resume: the run's store: %w", err)
	}
	dirs := stepDirs(cfg.Out)
	url := redact.URL(cfg.StoreURL())
	switch {
	case rebuild && len(steps) > 0:
		return invalid(fmt.Errorf("--rebuild-store: the run's store (%s) holds %d step record(s) of run %q, so it has not lost the run: resume without --rebuild-store", url, len(steps), cfg.Run))
	case rebuild && len(dirs) == 0:
		return invalid(fmt.Errorf("--rebuild-store: --out %s holds no step directory to rebuild the store from: resume without --rebuild-store", cfg.Out))
	case !rebuild && len(steps) == 0 && len(dirs) > 0:
		return invalid(fmt.Errorf("--resume: the run's store (%s) holds nothing of run %q while --out %s holds %d written step(s): the store lost the run (a Redis restarted without its data, or a store file replaced), and resuming would redo the written steps' rollouts; add --rebuild-store to rebuild the store's view from the step files (they are kept and not rerun), or start a new run in a new --out",
			url, cfg.Run, cfg.Out, len(dirs)))
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
