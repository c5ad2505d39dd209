package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/sim"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/backends"
)

// RescoreFlags are the configuration flags `mgrpo rescore` takes: those
// of the settings it recomputes (d̄, dropping zero-variance groups,
// r_expert's fallback, the judge), named as `mgrpo train` names them.
// The reward weights are YAML keys (rewards.*), read from --config.
var RescoreFlags = []string{"dbar", "drop-zero-variance", "expert-fallback", "judge-url", "judge-model"}

// RescoreSettings copies from c into into the keys a rescore may change:
// rewards.*, dbar, drop_zero_variance and judge.* (a --config file's, over
// the recorded run's).
func RescoreSettings(into *Config, c Config) {
	into.Rewards, into.DBar, into.DropZeroVariance, into.Judge = c.Rewards, c.DBar, c.DropZeroVariance, c.Judge
}

// RescoreOptions say which run Rescore recomputes, where the new run
// goes and with what settings.
type RescoreOptions struct {
	// From is the recorded run's directory, Out the new run's (it must
	// not exist, or be empty).
	From, Out string
	// Store is the recorded run's store as the run used it (--store):
	// "" for From's store.db; a redis:// or rediss:// URL (its password,
	// when the URL has none, from MGRPO_STORE_PASSWORD) is read, never
	// written; a sqlite:// file is read from a copy.
	Store string
	// Settings returns the new run's configuration from the recorded
	// run's, whose judge is cleared: a rescore calls a judge only when
	// asked. Nil: unchanged settings.
	Settings func(recorded Config) (Config, error)
	Hooks
	// OnStep, when set, receives each step's changes.
	OnStep func(farm.RescoreStep)
}

// RescoreResult is what a rescore did.
type RescoreResult struct {
	Steps []farm.RescoreStep
	// JudgeCalls counts the judge's answers asked of the model, JudgeCached
	// those found in the new or the recorded run's store.
	JudgeCalls, JudgeCached int64
	Rollouts                int
	Seconds                 float64
}

// RescoreChangesFile is the new run's per-step record of what the rescore
// changed (farm.RescoreStep lines).
const RescoreChangesFile = farm.RescoreChangesFile

// Rescore is `mgrpo rescore`: it recomputes the run in opts.From with new
// reward, judge, d̄ and zero-variance settings into the new run directory
// opts.Out (samples, statistics, rollouts.jsonl with the new scores,
// summary.jsonl, its store with the judge's answers cached, and
// rescore.jsonl). A directory that is no run, a run of another version or
// a corrupt store, or settings that need what the run did not keep, are
// configuration errors (exit 2) and leave nothing on disk: the new run is
// written into a hidden directory renamed into place at the end.
func Rescore(ctx context.Context, opts RescoreOptions) (RescoreResult, error) {
	logger := opts.logger()
	start := time.Now()
	if opts.Out == "" {
		return RescoreResult{}, invalid(errors.New("rescore: --out NEW_DIR is required"))
	}
	if err := farm.CheckRunDirs("rescore", opts.From, opts.Out, opts.Store == ""); err != nil {
		return RescoreResult{}, invalid(err)
	}
	src, runID, spec, err := openRecordedRun(ctx, opts.From, opts.Store)
	if err != nil {
		return RescoreResult{}, err
	}
	defer src.Close()
	recorded, next, fc, err := rescoreSettings(opts, runID, spec)
	if err != nil {
		return RescoreResult{}, err
	}
	fc.Logger = logger
	var judge *farm.CachedJudge
	prepare := func(fc *farm.RescoreConfig, dst store.Store) (func(), error) {
		var closeJudge func()
		var err error
		if judge, closeJudge, err = rescoreJudge(ctx, next, logger, dst, src.Store); err != nil {
			return nil, err
		}
		if err := rescoreParts(fc, recorded, next, judge); err != nil {
			closeJudge()
			return nil, err
		}
		return closeJudge, nil
	}
	steps, err := farm.RescoreInto(ctx, fc, farm.RescoreDir{Out: opts.Out, From: opts.From, Parquet: recorded.Format == "parquet",
		Open: backends.Open, Prepare: prepare})
	res := rescoreResult(steps, judge)
	if errors.Is(err, farm.ErrNotRescorable) {
		return RescoreResult{}, invalid(err)
	}
	if err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	logger.Info("rescored", "from", opts.From, "out", opts.Out, "steps", len(res.Steps), "rollouts", res.Rollouts,
		"judge_calls", res.JudgeCalls, "judge_cached", res.JudgeCached, "seconds", res.Seconds)
	return res, nil
}

// rescoreSettings reads the recorded run's configuration, the new one
// (opts.Settings over it, its judge cleared) and the farm's rescore
// configuration of both; a setting the run cannot take is a configuration
// error.
func rescoreSettings(opts RescoreOptions, runID string, spec farm.RunSpec) (recorded, next Config, fc farm.RescoreConfig, err error) {
	recorded, err = ConfigFromRunRecord(spec.Config)
	if err != nil {
		return recorded, next, fc, invalid(fmt.Errorf("rescore %s: %w", opts.From, err))
	}
	next = recorded
	next.Judge = EndpointConfig{Dialect: "openai"}
	if opts.Settings != nil {
		if next, err = opts.Settings(next); err != nil {
			return recorded, next, fc, err
		}
	}
	fc = farm.RescoreConfig{From: opts.From, Run: runID, Seed: recorded.Seed, GroupSize: recorded.GroupSize,
		WasDropZeroVariance: recorded.DropZeroVariance, DropZeroVariance: next.DropZeroVariance,
		Weights: next.Rewards.Weights(), KeepExpert: len(recorded.Judge.URLs) > 0, Prices: next.Prices, Tasks: spec.Tasks, OnStep: opts.OnStep}
	if fc.Mode, err = rollout.ParseMode(recorded.Mode); err != nil {
		return recorded, next, fc, invalid(fmt.Errorf("rescore %s: the recorded mode: %w", opts.From, err))
	}
	if fc.DBar, err = rollout.ParseDBar(next.DBar); err != nil {
		return recorded, next, fc, invalid(fmt.Errorf("--dbar: %w", err))
	}
	if fc.ExpertFallback, err = rollout.ParseExpertFallback(next.Rewards.ExpertFallback); err != nil {
		return recorded, next, fc, invalid(fmt.Errorf("--expert-fallback: %w", err))
	}
	if err := fc.Weights.Validate(); err != nil {
		return recorded, next, fc, invalid(fmt.Errorf("rewards: %w", err))
	}
	if recorded.GroupSize < 1 {
		return recorded, next, fc, invalid(fmt.Errorf("rescore %s: the recorded group size is %d", opts.From, recorded.GroupSize))
	}
	return recorded, next, fc, nil
}

// rescoreParts gives fc the judge's scorers (when there is a judge) and
// the new run's record: its settings, with the judge the rescore used
// (none: the recorded verdicts were kept).
func rescoreParts(fc *farm.RescoreConfig, recorded, next Config, judge *farm.CachedJudge) error {
	if judge != nil {
		fc.Scorer, fc.Expert = score.ForRun(judge)
		fc.KeepExpert = false
	}
	record := next
	if judge == nil {
		record.Judge = recorded.Judge
	}
	var err error
	fc.RunConfig, err = record.RunRecordConfig()
	return err
}

// rescoreResult is what a rescore of steps did, with judge's calls.
func rescoreResult(steps []farm.RescoreStep, judge *farm.CachedJudge) RescoreResult {
	res := RescoreResult{Steps: steps}
	for _, s := range steps {
		res.Rollouts += s.Rollouts
	}
	if judge != nil {
		res.JudgeCalls, res.JudgeCached = judge.Calls(), judge.Cached()
	}
	return res
}

// openRecordedRun opens a recorded run with this root's store backends
// (farm.OpenRecordedRun): a copy of its SQLite file, or its Redis read in
// place; a run that cannot be read is a configuration error.
func openRecordedRun(ctx context.Context, from, storeURL string) (*farm.RecordedStore, string, farm.RunSpec, error) {
	shared := func(ctx context.Context, url string) (store.Store, error) {
		return OpenStore(ctx, Config{Store: url}, os.Getenv)
	}
	src, id, spec, err := farm.OpenRecordedRun(ctx, from, storeURL, backends.Open, shared)
	return src, id, spec, unreadableInvalid(err)
}

// unreadableInvalid makes a recorded run the farm cannot read a
// configuration error (exit 2), its message unchanged.
func unreadableInvalid(err error) error {
	if errors.Is(err, farm.ErrUnreadableRun) {
		return invalid(err)
	}
	return err
}

// rescoreJudge returns the judge of c, its answers cached in the new
// run's store (dst) and looked up in the recorded run's (src) too; nil
// without a judge. A sim judge starts the simulated model alone.
func rescoreJudge(ctx context.Context, c Config, h *slog.Logger, dst, src store.Cache) (*farm.CachedJudge, func(), error) {
	if len(c.Judge.URLs) == 0 {
		if c.Judge.Model != "" {
			return nil, nil, invalid(errors.New("--judge-model without --judge-url: name the judge's endpoint (or sim)"))
		}
		return nil, func() {}, nil
	}
	closers := []func(){}
	closeAll := func() {
		for _, f := range slices.Backward(closers) {
			f()
		}
	}
	if c.SimJudge() {
		w, err := sim.Start(sim.Options{Seed: c.Seed, Dialect: c.Executor.Dialect})
		if err != nil {
			return nil, nil, fmt.Errorf("rescore: the simulated judge: %w", err)
		}
		closers = append(closers, func() { w.Close() })
		c.Judge.URLs, c.Judge.Dialect = []string{w.LLMURL}, "openai"
		if c.Judge.Model == "" {
			c.Judge.Model = SimModel
		}
		h.Info("simulated judge started", "llm", w.LLMURL)
	}
	if c.Judge.Model == "" {
		closeAll()
		return nil, nil, invalid(errors.New("--judge-url without --judge-model: name the judge's model"))
	}
	cl, err := newClient("judge", c.Judge, false, nil, nil, nil)
	if err != nil {
		closeAll()
		return nil, nil, invalid(err)
	}
	closers = append(closers, cl.Close)
	return farm.NewCachedJudge(score.LLMChat{Client: cl}, c.Judge.Model, dst, src), closeAll, nil
}
