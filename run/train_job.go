package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
)

// TrainOptions say how Train runs beside the configuration.
type TrainOptions struct {
	RolloutOptions
	// SideSteps is, for the executor side of a decoupled run
	// (train.role executor), how many steps it trains before it returns
	// (0: it follows the run to its end).
	SideSteps int
	// KeepMaxStaleness makes the executor side use the configuration's
	// train.max_staleness (given on the command line) instead of the one
	// the run's planner side recorded.
	KeepMaxStaleness bool
}

// Train is `mgrpo train`: Rollout with each step's batches trained and the
// new weights synced to the endpoints before the next step (or, with
// train.max_staleness, while later steps' rollouts run). A `--sim` run
// without trainers trains in the simulated world. With train.role executor
// it is the executors' side of a decoupled run and returns no summaries.
func Train(ctx context.Context, cfg Config, opts TrainOptions) ([]rollout.StepSummary, error) {
	ApplySimTraining(&cfg)
	if cfg.Train.Role == string(rollout.RoleExecutor) {
		return nil, executorSide(ctx, cfg, opts)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("train %w", err)
	}
	if err := cfg.CheckTraining(); err != nil {
		return nil, err
	}
	return execute(ctx, cfg, opts.RolloutOptions, true)
}

// executorSide is the executors' side of a decoupled run, following the
// run the planner side records in the store (the store key, or the sqlite
// store of the planner side's out directory). flags is the command line's
// configuration: its store, out, run and train keys.
func executorSide(ctx context.Context, flags Config, opts TrainOptions) error {
	if flags.Store == "" && flags.Out == "" || flags.Store == StoreNone {
		return invalid(errors.New("--role executor: name the run's store with --store (or the planner side's --out for its sqlite store)"))
	}
	if err := CheckStoreURL(flags.Store); err != nil {
		return invalid(fmt.Errorf("--store %w", err))
	}
	if flags.Store == "" {
		// The planner side's sqlite store: opening a missing one would
		// create it (and --out) for a run that is not there.
		if _, err := os.Stat(filepath.Join(flags.Out, StoreFile)); err != nil {
			return invalid(fmt.Errorf("--role executor: %s has no run's store (%s): start the planner side (`mgrpo train --role planner --out %s …`) first, or name its store with --store", flags.Out, StoreFile, flags.Out))
		}
	}
	st, err := OpenStore(ctx, flags, os.Getenv)
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := findRun(ctx, st, flags.Run)
	if err != nil {
		return err
	}
	spec, err := farm.ReadRunSpec(rec)
	if err != nil {
		return err
	}
	cfg, err := ConfigFromRunRecord(spec.Config)
	if err != nil {
		return err
	}
	// The staleness bound and policy are the run's, as its planner side
	// recorded them.
	recorded := cfg.Train
	cfg.Run, cfg.Train, cfg.Store, cfg.Out = rec.ID, flags.Train, flags.Store, flags.Out
	if !opts.KeepMaxStaleness {
		// So that this side's syncs pause as the run's asynchrony needs.
		cfg.Train.MaxStaleness = recorded.MaxStaleness
	}
	if err := cfg.CheckTraining(); err != nil {
		return err
	}
	states, err := farm.TrainerStatesToResume(ctx, st, rec.ID, []rollout.Role{rollout.RoleExecutor})
	if err != nil {
		return fmt.Errorf("the executor trainer's saved state: %w", err)
	}
	training, err := BuildTraining(ctx, cfg, states, opts.logger())
	if err != nil {
		return err
	}
	defer training.Close()
	return farm.TrainSide(ctx, farm.SideConfig{Store: st, Run: rec.ID, Role: rollout.RoleExecutor,
		Trainer: training.Trainers[rollout.RoleExecutor], Syncer: training.Syncers[rollout.RoleExecutor], Steps: opts.SideSteps,
		MaxStaleness: cfg.Train.MaxStaleness, StalePolicy: farm.StalePolicy(recorded.StalePolicy), Grace: cfg.Grace.Duration, Logger: opts.Logger})
}
