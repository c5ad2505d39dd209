package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// farmParts are the built pieces a farm's configuration holds beside the
// values of Config.
type farmParts struct {
	// stack runs the rollouts and holds the judge (nil: a coordinator
	// whose workers run every rollout still gets one, for scoring).
	stack *Stack
	// store is the run's store, nil with store: none.
	store store.Store
	// resume continues the run found in store.
	resume bool
	// rebuild rebuilds the store's view of the run from its step files.
	rebuild bool
	// lease is the coordinator's lease (0: the farm's default).
	lease time.Duration
	// training trains each step (nil: rollouts only).
	training *Training
	// sink receives the steps' files (nil: a worker, which writes none).
	sink  rollout.Sink
	hooks Hooks
}

// farmConfig returns the farm's configuration for c and the parts built
// from it — the one place a farm.Config is filled — and a description of
// r_correct for the start-of-run log. c must have passed Validate; an
// error wraps ErrConfig.
func (c Config) farmConfig(ctx context.Context, p farmParts) (farm.Config, string, error) {
	mode, err := rollout.ParseMode(c.Mode)
	if err != nil {
		return farm.Config{}, "", fmt.Errorf("%w: %s: %w", ErrConfig, name("mode", "mode"), err)
	}
	dbar, err := rollout.ParseDBar(c.DBar)
	if err != nil {
		return farm.Config{}, "", fmt.Errorf("%w: %s: %w", ErrConfig, name("dbar", "dbar"), err)
	}
	fallback, err := rollout.ParseExpertFallback(c.Rewards.ExpertFallback)
	if err != nil {
		return farm.Config{}, "", fmt.Errorf("%w: %s: %w", ErrConfig, name("rewards.expert_fallback", "expert-fallback"), err)
	}
	fc := farm.Config{
		Run: c.Run, Seed: c.Seed, Steps: c.Steps, BatchSize: c.BatchSize, GroupSize: c.GroupSize,
		Mode: mode, DBar: dbar, DropZeroVariance: c.DropZeroVariance, Weights: c.Rewards.Weights(),
		ExpertFallback: fallback, Concurrency: c.Concurrency.Rollouts(), Grace: c.Grace.Duration, Prices: c.Prices,
		Sink: p.sink, Logger: p.hooks.Logger, OnProgress: p.hooks.OnProgress, OnStep: p.hooks.OnStep,
		Metrics: farm.NewMetrics(p.hooks.Registerer), Sampling: c.samplingRecords(mode),
	}
	onInfra, err := farm.ParseInfraPolicy(c.OnInfraFailure)
	if err != nil {
		return farm.Config{}, "", fmt.Errorf("%w: %s: %w", ErrConfig, name("on_infra_failure", "on-infra-failure"), err)
	}
	fc.Failures = farm.FailurePolicy{RolloutRetries: c.RolloutRetries, TaintToolOutages: true, MaxToolOutageFraction: c.MaxToolOutageFraction,
		OnInfra: onInfra, StopWhenUseless: true, MaxFailedFraction: c.MaxFailedFraction}
	correctness := p.stack.configure(&fc)
	if p.store != nil {
		fc.Store = p.store
		if p.sink != nil {
			// A coordinator: the run's record for its workers, and how its
			// rollouts are handed out.
			if fc.RunConfig, err = c.RunRecordConfig(); err != nil {
				return farm.Config{}, "", err
			}
			if p.resume {
				fc.RunConfig = recordedEquivalent(ctx, p.store, c.Run, fc.RunConfig)
			}
			fc.Resume = p.resume
			if p.rebuild {
				fc.RebuildFrom = c.Out
			}
			fc.Queue, fc.Concurrency = c.Queue()
			fc.Worker.Lease = p.lease
		}
	}
	if p.training != nil {
		fc.Training = &p.training.Training
	}
	return fc, correctness, nil
}

// recordedEquivalent returns the configuration the store's record of run
// holds when it is this one's, read over today's defaults: a run started
// by an older mgrpo, whose record lacks the keys added since, resumes as
// the same run (the keys it lacks take their defaults, which is what that
// version did). Otherwise, or when nothing is recorded, it returns ours,
// and the farm's own check decides.
func recordedEquivalent(ctx context.Context, st store.Store, run string, ours json.RawMessage) json.RawMessage {
	rec, err := st.Run(ctx, run)
	if err != nil {
		return ours
	}
	spec, err := farm.ReadRunSpec(rec)
	if err != nil {
		return ours
	}
	stored, err := ConfigFromRunRecord(spec.Config)
	if err != nil {
		return ours
	}
	if again, err := stored.RunRecordConfig(); err == nil && bytes.Equal(again, ours) {
		return spec.Config
	}
	return ours
}
