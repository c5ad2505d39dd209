package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/datasets"
	"github.com/mgrpo/mgrpo/bench/evalrun"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/backends"
)

// EvalOptions say what Eval evaluates beside the agents' configuration.
type EvalOptions struct {
	// Benchmark is gaia, webwalkerqa, xbench or jsonl.
	Benchmark string
	// Data is the benchmark's file or folder; with the simulated world and
	// no Data, the sim web's questions in the benchmark's layout.
	Data string
	// Scorer is auto (the benchmark's protocol), exact, judge or cascade.
	Scorer string
	// Runs is the number of runs per question.
	Runs int
	// Filter selects the questions.
	Filter bench.Filter
	// OnProgress is called after every finished run of a question.
	OnProgress func(evalrun.Progress)
	// Replace lets an eval whose questions or runs leave out results its
	// directory holds rewrite the report (see evalrun.ErrNarrower).
	Replace bool
	Hooks
}

// Eval is `mgrpo eval`: it runs the agents on a benchmark and writes
// results.jsonl, summary.json and report.md into the configuration's out
// directory; running it again continues an interrupted eval.
func Eval(ctx context.Context, cfg Config, opts EvalOptions) (evalrun.Outcome, error) {
	if err := checkEval(cfg, opts.Benchmark, opts.Data, opts.Scorer); err != nil {
		return evalrun.Outcome{}, err
	}
	if err := cfg.checkSimEndpoints(); err != nil {
		return evalrun.Outcome{}, err
	}
	logger := opts.logger()
	world, err := StartSim(&cfg, logger)
	if err != nil {
		return evalrun.Outcome{}, err
	}
	data, simData := opts.Data, ""
	if world != nil {
		defer world.Close()
		if data == "" {
			// The questions go to a scratch folder first and reach the out
			// directory only once everything is checked.
			tmp, err := os.MkdirTemp("", "mgrpo-eval-sim-")
			if err != nil {
				return evalrun.Outcome{}, err
			}
			defer os.RemoveAll(tmp)
			simData = evalrun.SimDataPath(opts.Benchmark)
			data = filepath.Join(tmp, simData)
			if err := WriteSimTasks(world, data, evalrun.SimDataFormat(opts.Benchmark)); err != nil {
				return evalrun.Outcome{}, err
			}
		}
	}
	items, err := evalItems(cfg, opts, data)
	if err != nil {
		return evalrun.Outcome{}, err
	}
	mode, _ := rollout.ParseMode(cfg.Mode)
	bopts := Options{Single: mode == rollout.ModeSingle, Probe: true, Getenv: Getenv(world), Logger: logger, Registerer: opts.Registerer}
	var recording replay.KV
	if cfg.Record {
		wb, err := openEvalRecording(ctx, cfg)
		if err != nil {
			return evalrun.Outcome{}, err
		}
		defer wb.Close()
		bopts.Recorder = replay.NewRecorder(wb, logger)
		recording = wb
	}
	stack, err := Build(ctx, cfg, bopts)
	if err != nil {
		return evalrun.Outcome{}, err
	}
	defer stack.Close()
	scorer, err := score.ForBenchmark(opts.Benchmark, opts.Scorer, stack.Judge)
	if err != nil {
		return evalrun.Outcome{}, invalid(err)
	}
	ecfg := evalrun.Config{
		Benchmark: opts.Benchmark, Items: items, Runs: opts.Runs, Out: cfg.Out, Agent: stack.Agent(), Scorer: scorer,
		Concurrency: cfg.Concurrency.Rollouts(), Seed: cfg.Seed, Grace: cfg.Grace.Duration, Logger: logger, OnProgress: opts.OnProgress,
		Replace: opts.Replace,
	}
	if err := ecfg.Validate(); err != nil {
		return evalrun.Outcome{}, invalid(err)
	}
	if world != nil && simData != "" {
		if err := WriteSimTasks(world, filepath.Join(cfg.Out, simData), evalrun.SimDataFormat(opts.Benchmark)); err != nil {
			return evalrun.Outcome{}, err
		}
	}
	if recording != nil {
		// What a replay reruns: the same pairs, scored the same way.
		if err := recordEvalSpec(ctx, recording, cfg, opts, simData, items); err != nil {
			return evalrun.Outcome{}, err
		}
	}
	if opts.OnStart != nil {
		opts.OnStart()
	}
	return evalrun.Run(ctx, ecfg)
}

// evalItems loads the eval's questions and refuses, before anything runs,
// settings that would leave results of the out directory out of its
// report (see evalrun.ErrNarrower) unless opts.Replace asks for it.
func evalItems(cfg Config, opts EvalOptions, data string) ([]bench.Item, error) {
	items, err := datasets.Load(opts.Benchmark, data, opts.Filter)
	if err != nil {
		return nil, invalid(err)
	}
	if err := evalrun.CheckDir(evalrun.Config{Items: items, Runs: opts.Runs, Out: cfg.Out, Replace: opts.Replace}); err != nil {
		return nil, invalid(err)
	}
	return items, nil
}

// openEvalRecording opens the store an eval's recording is kept in: an
// eval has no store of its own, so the recording gets one in its out
// directory, its entries written several at a time, as the run's store's
// are.
func openEvalRecording(ctx context.Context, cfg Config) (store.Store, error) {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	st, err := backends.Open(ctx, "sqlite://"+filepath.ToSlash(filepath.Join(cfg.Out, StoreFile)))
	if err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	return store.NewWriteBehind(st, store.DefaultWriteBehind), nil
}

// checkEval reports every problem of an eval's configuration at once, with
// how to fix each, before anything starts: the eval's settings
// (evalrun.CheckSettings), the timeouts and the gateway.
func checkEval(cfg Config, benchmark, data, scorer string) error {
	errs := evalrun.CheckSettings(evalrun.Settings{Benchmark: benchmark, Data: data, Scorer: scorer, Out: cfg.Out,
		Sim: cfg.Sim, Judge: len(cfg.Judge.URLs) > 0, Mode: cfg.Mode})
	errs = append(errs, cfg.CheckTimeouts(), cfg.CheckGateway())
	if err := errors.Join(errs...); err != nil {
		return invalid(fmt.Errorf("eval configuration:\n%w", err))
	}
	return nil
}
