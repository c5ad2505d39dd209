package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
)

// ReplayOptions say which recorded run Replay reruns and where.
type ReplayOptions struct {
	// From is the recorded run's directory (recorded with --record), Out
	// the new run's (it must not exist, or be empty).
	From, Out string
	// Store is the recorded run's store as the run used it (--store), read
	// only: "" for From's store.db, a redis:// or rediss:// URL (its
	// password, when the URL has none, from MGRPO_STORE_PASSWORD), or a
	// sqlite:// file (read from a copy), as Rescore reads it.
	Store string
	// Prompts, when set, replace the recorded run's prompt templates by
	// name (the YAML prompts key of --config).
	Prompts map[string]string
	Hooks
}

// ReplayMiss is a request the recording did not hold, located in the run.
type ReplayMiss = farm.ReplayMiss

// ReplayResult is what a replay did.
type ReplayResult struct {
	Summaries []rollout.StepSummary
	// Calls counts the model calls answered from the recording; Misses
	// are the requests it did not hold, the first of each rollout.
	Calls  int64
	Misses []ReplayMiss
	// Eval is set when the replayed run was an eval (Summaries and
	// Misses are then empty).
	Eval *EvalReplay
}

// ReplayMissesFile is the replayed run's record of the requests the
// recording did not hold (ReplayMiss lines).
const ReplayMissesFile = "replay-misses.jsonl"

// Replay is `mgrpo replay`: it reruns the agents of the run in opts.From
// (this program's code, prompts and configuration, the recorded run's
// settings) against the run's recording (in From's store, or opts.Store),
// with no engine, no web and no trainer: the same requests get the same
// answers, so an unchanged program writes the same files. Each step runs
// the rollouts the recorded step ran, at the versions they were sampled
// with (farm.ReadSchedule), whatever timing formed the recorded steps
// (asynchronous or streamed training). A request the recording does not
// hold stops its rollout (recorded as failed) and is reported with its
// difference from the request recorded at that turn. A directory that is
// no run, a run without a recording, a corrupt store and unreadable step
// files are configuration errors. An eval's folder is replayed as an eval
// (replayEval).
func Replay(ctx context.Context, opts ReplayOptions) (ReplayResult, error) {
	logger := opts.logger()
	if opts.Out == "" {
		return ReplayResult{}, invalid(errors.New("replay: --out DIR is required"))
	}
	if opts.From != "" && filepath.Clean(opts.From) != filepath.Clean(opts.Out) && isEvalDir(opts.From) {
		return replayEval(ctx, opts)
	}
	if err := farm.CheckRunDirs("replay", opts.From, opts.Out, opts.Store == ""); err != nil {
		return ReplayResult{}, invalid(err)
	}
	src, _, spec, err := openRecordedRun(ctx, opts.From, opts.Store)
	if err != nil {
		return ReplayResult{}, err
	}
	defer src.Close()
	if ok, err := replay.HasRecording(ctx, src.Store); err != nil || !ok {
		return ReplayResult{}, invalid(fmt.Errorf("replay: %s holds no recording (run it with --record to replay it)", opts.From))
	}
	sums, err := rollout.ReadSummaries(filepath.Join(opts.From, rollout.SummaryFile))
	if err != nil || len(sums) == 0 {
		return ReplayResult{}, invalid(fmt.Errorf("replay: %s: no step written (%v)", opts.From, err))
	}
	cfg, getenv, schedule, err := replayedRun(opts, spec, sums)
	if err != nil {
		return ReplayResult{}, err
	}

	player := replay.NewPlayer(src.Store)
	mode, _ := rollout.ParseMode(cfg.Mode)
	stack, err := Build(ctx, cfg, Options{Single: mode == rollout.ModeSingle, Capture: true,
		Getenv: placeholderKeys(getenv), Logger: logger, Player: player})
	if err != nil {
		return ReplayResult{}, err
	}
	defer stack.Close()
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return ReplayResult{}, fmt.Errorf("replay: %w", err)
	}
	runStore, err := OpenStore(ctx, cfg, os.Getenv)
	if err != nil {
		return ReplayResult{}, err
	}
	defer runStore.Close()
	fc, _, err := cfg.farmConfig(ctx, farmParts{stack: stack, store: runStore, hooks: opts.Hooks,
		sink: &rollout.DirSink{Dir: cfg.Out, Parquet: cfg.Format == "parquet"}})
	if err != nil {
		return ReplayResult{}, err
	}
	// Each step runs the rollouts the recorded step ran, at the versions
	// they were sampled with: the trainers' updates are not replayed,
	// their versions and records are.
	fc.Schedule = schedule
	f, err := farm.New(fc, spec.Tasks)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := farm.CopyIfPresent(filepath.Join(opts.From, "tasks.jsonl"), filepath.Join(opts.Out, "tasks.jsonl")); err != nil {
		return ReplayResult{}, err
	}
	summaries, runErr := f.Run(ctx)
	res := ReplayResult{Summaries: summaries, Calls: player.Calls(), Misses: farm.LocateReplayMisses(player.Misses(), schedule)}
	if err := farm.WriteJSONLines(filepath.Join(opts.Out, ReplayMissesFile), res.Misses); err != nil {
		return res, err
	}
	if runErr != nil {
		return res, fmt.Errorf("replay stopped after %d of %d steps: %w", len(summaries), len(sums), runErr)
	}
	logger.Info("replayed", "from", opts.From, "out", opts.Out, "steps", len(summaries), "calls", res.Calls, "misses", len(res.Misses))
	return res, nil
}

// replayedRun returns the configuration a replay of the recorded run
// (spec, its steps sums) runs with, the tools' keys and the schedule of
// its steps.
func replayedRun(opts ReplayOptions, spec farm.RunSpec, sums []rollout.StepSummary) (Config, func(string) string, []farm.ScheduledStep, error) {
	cfg, err := ConfigFromRunRecord(spec.Config)
	if err != nil {
		return Config{}, nil, nil, invalid(fmt.Errorf("replay %s: %w", opts.From, err))
	}
	// Which groups a step took and at which versions followed the run's
	// timing (asynchronous and streamed training): the replay forms each
	// step from what the recorded step took instead.
	schedule, err := farm.ReadSchedule(opts.From, sums)
	if err != nil {
		return Config{}, nil, nil, invalid(fmt.Errorf("replay: %w", err))
	}
	overridePrompts(&cfg, opts.Prompts)
	defaults := DefaultConfig()
	// The recorded world is not started: its answers are in the recording.
	getenv := Getenv(nil)
	if cfg.Sim {
		getenv = SimGetenv(true)
	}
	cfg.Sim, cfg.Out, cfg.Steps, cfg.Store, cfg.Workers = false, opts.Out, len(sums), "", -1
	cfg.Concurrency, cfg.Grace, cfg.Record = defaults.Concurrency, defaults.Grace, false
	return cfg, getenv, schedule, nil
}

// placeholderKeys reads the tools' keys, a placeholder standing in for
// a missing one: a replay calls no provider, but the tools are built.
func placeholderKeys(getenv func(string) string) func(string) string {
	return func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return "replay"
	}
}

// overridePrompts replaces cfg's prompt templates by name with prompts
// (a replay's --config prompts key).
func overridePrompts(cfg *Config, prompts map[string]string) {
	for name, text := range prompts {
		if cfg.Prompts == nil {
			cfg.Prompts = map[string]string{}
		}
		cfg.Prompts[name] = text
	}
}
