package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/farm"
	"github.com/mgrpo/mgrpo/run"
	"github.com/mgrpo/mgrpo/sim"
	"github.com/mgrpo/mgrpo/sim/web"
)

// executeRun builds the run from a validated configuration and runs the
// farm. Everything that can be checked is checked before the first rollout,
// and a configuration error leaves nothing on disk.
func executeRun(ctx context.Context, cfg run.Config, opts runOptions, metricsAddr string, logger *slog.Logger, stdout io.Writer, con *console) error {
	resume := opts.resume
	if cfg.Run == "" {
		cfg.Run = filepath.Base(filepath.Clean(cfg.Out))
	}
	if resume && cfg.StoreURL() == "" {
		return usageError{errors.New("--resume: a run kept in memory (--store none) cannot be resumed; runs resume from their store")}
	}
	if err := checkOutDir(cfg.Out, resume); err != nil {
		return usageError{err}
	}
	if resume {
		removed, err := rollout.RemoveTempSteps(cfg.Out)
		if err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
		if len(removed) > 0 {
			logger.Info("removed the partial step directories of the stopped run", "dirs", removed)
		}
	}
	fc, err := cfg.FarmConfig()
	if err != nil {
		return err
	}
	reg, metrics, err := startMetrics(metricsAddr, logger)
	if err != nil {
		return err
	}
	defer metrics.stop()
	world, err := run.StartSim(&cfg, logger)
	if err != nil {
		return err
	}
	if world != nil {
		defer world.Close()
	}
	tasks, source, err := loadTasks(cfg, world)
	if err != nil {
		return err
	}
	if err := cfg.CheckTasks(tasks, source); err != nil {
		return err
	}
	runStore, err := run.OpenStore(ctx, cfg, os.Getenv)
	if err != nil {
		return err
	}
	if runStore != nil {
		// Closed after the stack, whose tools use it as their cache.
		defer runStore.Close()
		if fc.RunConfig, err = cfg.RunRecordConfig(); err != nil {
			return err
		}
		fc.Store, fc.Resume = runStore, resume
		var local int
		fc.Queue, local = cfg.Queue()
		fc.Concurrency = local
		logger.Info("run store", "store", redact.URL(cfg.StoreURL()), "queue", fc.Queue, "local_rollouts", local, "resume", resume)
	}
	bopts := run.Options{Single: fc.Mode == rollout.ModeSingle, Capture: true,
		Getenv: run.Getenv(world), Logger: logger, Registerer: reg}
	if runStore != nil {
		bopts.SharedCache = runStore
	}
	st, err := run.Build(ctx, cfg, bopts)
	if err != nil {
		return err
	}
	defer st.Close()
	correctness := st.Configure(&fc)
	if opts.train {
		var states map[rollout.Role][]byte
		if resume && runStore != nil {
			if states, err = farm.TrainerStatesToResume(ctx, runStore, cfg.Run, []rollout.Role{rollout.RolePlanner, rollout.RoleExecutor}); err != nil {
				return fmt.Errorf("--resume: the trainers' saved state: %w", err)
			}
		}
		training, err := run.BuildTraining(ctx, cfg, states)
		if err != nil {
			return err
		}
		defer training.Close()
		fc.Training = &training.Training
	}
	progress := newProgressReporter(con, logger)
	fc.Sink = &rollout.DirSink{Dir: cfg.Out, Parquet: cfg.Format == "parquet"}
	table := &stepTable{w: stdout, progress: progress}
	fc.Logger, fc.OnProgress, fc.OnStep, fc.Metrics = logger, progress.report, table.row, farm.NewMetrics(reg)
	f, err := farm.New(fc, tasks)
	if err != nil {
		return fmt.Errorf("%w: %w", run.ErrConfig, err)
	}
	if world != nil && cfg.Tasks == "" && !fileExists(filepath.Join(cfg.Out, "tasks.jsonl")) {
		// Written only now that the run will start, for the record of which
		// questions it asked.
		if err := writeSimTasks(world, filepath.Join(cfg.Out, "tasks.jsonl"), "jsonl"); err != nil {
			return err
		}
	}
	logger.Info("scoring", "r_correct", correctness)
	start := time.Now()
	summaries, runErr := f.Run(ctx)
	progress.done()
	table.end(cfg.Out, time.Since(start))
	if runErr != nil {
		return fmt.Errorf("rollout stopped after %d of %d steps: %w", len(summaries), cfg.Steps, runErr)
	}
	return nil
}

// runOptions say what kind of run executeRun runs.
type runOptions struct {
	// resume continues the run in --out.
	resume bool
	// train trains each step (mgrpo train).
	train bool
}

// loadTasks reads the configured task file, or with the simulated world
// and no file takes the sim web's questions; it returns them with a name
// for messages.
func loadTasks(cfg run.Config, world *sim.World) ([]farm.Task, string, error) {
	if cfg.Tasks == "" {
		tasks, err := run.SimTasks(world)
		return tasks, "the sim web's questions", err
	}
	tasks, err := farm.LoadTasks(cfg.Tasks)
	if err != nil {
		return nil, "", fmt.Errorf("%w: --tasks: %w", run.ErrConfig, err)
	}
	return tasks, cfg.Tasks, nil
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

// writeSimTasks writes the sim web's questions to path in a task format
// (jsonl, gaia, webwalkerqa), creating its directory.
func writeSimTasks(w *sim.World, path, format string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write sim tasks: %w", err)
	}
	return writeOut(path, nil, func(out io.Writer) error { return web.WriteTasks(out, w.Web.Questions, format) })
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
