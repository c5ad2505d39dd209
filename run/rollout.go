package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/farm"
)

// RolloutOptions say how Rollout and Train run beside the configuration.
type RolloutOptions struct {
	// Resume continues the run in the configuration's out directory (or
	// store): written steps are kept, stored rollouts are not redone.
	Resume bool
	Hooks
}

// Rollout is `mgrpo rollout`: it validates cfg, starts the simulated world
// when asked, opens the run's store, builds the agents and runs the farm,
// returning the summaries of the steps written. Everything that can be
// checked is checked before the first rollout, and a configuration error
// (wrapping ErrConfig) leaves nothing on disk.
func Rollout(ctx context.Context, cfg Config, opts RolloutOptions) ([]rollout.StepSummary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rollout %w", err)
	}
	return execute(ctx, cfg, opts, false)
}

// execute builds the run of a validated configuration and runs the farm;
// train adds the trainers and weight syncers.
func execute(ctx context.Context, cfg Config, opts RolloutOptions, train bool) ([]rollout.StepSummary, error) {
	logger, resume := opts.logger(), opts.Resume
	if cfg.Run == "" {
		cfg.Run = filepath.Base(filepath.Clean(cfg.Out))
	}
	if resume && cfg.StoreURL() == "" {
		return nil, invalid(errors.New("--resume: a run kept in memory (--store none) cannot be resumed; runs resume from their store"))
	}
	if err := checkOutDir(cfg.Out, resume); err != nil {
		return nil, invalid(err)
	}
	if resume {
		removed, err := rollout.RemoveTempSteps(cfg.Out)
		if err != nil {
			return nil, fmt.Errorf("--resume: %w", err)
		}
		if len(removed) > 0 {
			logger.Info("removed the partial step directories of the stopped run", "dirs", removed)
		}
	}
	world, err := StartSim(&cfg, logger)
	if err != nil {
		return nil, err
	}
	if world != nil {
		defer world.Close()
	}
	tasks, source, err := loadTasks(cfg, world)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckTasks(tasks, source); err != nil {
		return nil, err
	}
	runStore, err := OpenStore(ctx, cfg, os.Getenv)
	if err != nil {
		return nil, err
	}
	bopts := Options{Single: cfg.Mode == string(rollout.ModeSingle), Capture: true,
		Getenv: Getenv(world), Logger: logger, Registerer: opts.Registerer}
	if runStore != nil {
		// Closed after the stack, whose tools use it as their cache.
		defer runStore.Close()
		queued, local := cfg.Queue()
		logger.Info("run store", "store", redact.URL(cfg.StoreURL()), "queue", queued, "local_rollouts", local, "resume", resume)
		bopts.SharedCache = runStore
	}
	stack, err := Build(ctx, cfg, bopts)
	if err != nil {
		return nil, err
	}
	defer stack.Close()
	parts := farmParts{stack: stack, store: runStore, resume: resume, hooks: opts.Hooks,
		sink: &rollout.DirSink{Dir: cfg.Out, Parquet: cfg.Format == "parquet"}}
	if train {
		var states map[rollout.Role][]byte
		if resume && runStore != nil {
			if states, err = farm.TrainerStatesToResume(ctx, runStore, cfg.Run, []rollout.Role{rollout.RolePlanner, rollout.RoleExecutor}); err != nil {
				return nil, fmt.Errorf("--resume: the trainers' saved state: %w", err)
			}
		}
		if parts.training, err = BuildTraining(ctx, cfg, states); err != nil {
			return nil, err
		}
		defer parts.training.Close()
	}
	fc, correctness, err := cfg.farmConfig(parts)
	if err != nil {
		return nil, err
	}
	f, err := farm.New(fc, tasks)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if world != nil && cfg.Tasks == "" && !fileExists(filepath.Join(cfg.Out, "tasks.jsonl")) {
		// Written only now that the run will start, for the record of which
		// questions it asked.
		if err := WriteSimTasks(world, filepath.Join(cfg.Out, "tasks.jsonl"), "jsonl"); err != nil {
			return nil, err
		}
	}
	logger.Info("scoring", "r_correct", correctness)
	if opts.OnStart != nil {
		opts.OnStart()
	}
	summaries, err := f.Run(ctx)
	if err != nil {
		return summaries, fmt.Errorf("rollout stopped after %d of %d steps: %w", len(summaries), cfg.Steps, err)
	}
	return summaries, nil
}

// checkOutDir refuses an output directory that already holds steps, unless
// resuming: steps are never overwritten.
func checkOutDir(out string, resume bool) error {
	if resume {
		return nil
	}
	entries, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "step-") {
			return fmt.Errorf("--out %s already holds %s: continue that run with --resume, or choose a new --out (steps are never overwritten)", out, e.Name())
		}
	}
	return nil
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
