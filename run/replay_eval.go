package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/evalrun"
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store/backends"
)

// EvalReplay is what the replay of an eval did.
type EvalReplay = evalrun.Replayed

// EvalReplayMiss is a request of an eval the recording did not hold,
// located by the benchmark item and the run index.
type EvalReplayMiss = evalrun.ReplayMiss

// recordEvalSpec keeps the eval's spec in its recording: the run's
// configuration as a run record holds it, and the eval's options.
func recordEvalSpec(ctx context.Context, kv replay.KV, cfg Config, opts EvalOptions, simData string, items []bench.Item) error {
	raw, err := cfg.RunRecordConfig()
	if err != nil {
		return err
	}
	spec := evalrun.Spec{Config: raw, Benchmark: opts.Benchmark, SimData: filepath.ToSlash(simData), Scorer: opts.Scorer, Runs: opts.Runs, Filter: opts.Filter}
	if opts.Data != "" {
		if spec.Data, err = filepath.Abs(opts.Data); err != nil {
			return fmt.Errorf("--record: %w", err)
		}
	}
	return evalrun.RecordSpec(ctx, kv, spec, items)
}

// isEvalDir reports whether dir is an eval's folder rather than a run's.
func isEvalDir(dir string) bool { return evalrun.IsEvalDir(dir) }

// recordedEval is what a replay of an eval reads of the recorded one.
type recordedEval struct {
	src   *farm.RecordedStore
	spec  evalrun.Spec
	cfg   Config
	items []bench.Item
	// lines is the recorded results.jsonl.
	lines []byte
}

// replayEval is Replay of an eval recorded with `mgrpo eval --record`:
// the same pairs, the agents and the judge answered from the recording,
// written into opts.Out as the eval wrote them (results.jsonl in the
// recorded eval's line order, since pairs finish in whatever order they
// run in). The latency fields are the replay's own wall-clock.
func replayEval(ctx context.Context, opts ReplayOptions) (ReplayResult, error) {
	logger := opts.logger()
	if err := farm.CheckNewDir("replay", opts.Out); err != nil {
		return ReplayResult{}, invalid(err)
	}
	rec, err := openRecordedEval(ctx, opts)
	if rec.src != nil {
		defer rec.src.Close()
	}
	if err != nil {
		return ReplayResult{}, err
	}
	cfg := rec.cfg
	overridePrompts(&cfg, opts.Prompts)
	defaults := DefaultConfig()
	getenv := SimGetenv(cfg.Sim)
	cfg.Sim, cfg.Out, cfg.Record = false, opts.Out, false
	cfg.Concurrency, cfg.Grace = defaults.Concurrency, defaults.Grace

	player := replay.NewPlayer(rec.src.Store)
	mode, _ := rollout.ParseMode(cfg.Mode)
	stack, err := Build(ctx, cfg, Options{Single: mode == rollout.ModeSingle, Getenv: placeholderKeys(getenv), Logger: logger, Player: player})
	if err != nil {
		return ReplayResult{}, err
	}
	defer stack.Close()
	scorer, err := score.ForBenchmark(rec.spec.Benchmark, rec.spec.Scorer, stack.Judge)
	if err != nil {
		return ReplayResult{}, invalid(fmt.Errorf("replay %s: %w", opts.From, err))
	}
	ecfg := evalrun.Config{
		Benchmark: rec.spec.Benchmark, Items: rec.items, Runs: rec.spec.Runs, Out: opts.Out, Agent: stack.Agent(), Scorer: scorer,
		Concurrency: cfg.Concurrency.Rollouts(), Seed: cfg.Seed, Grace: cfg.Grace.Duration, Logger: logger,
	}
	if err := ecfg.Validate(); err != nil {
		return ReplayResult{}, invalid(fmt.Errorf("replay %s: %w", opts.From, err))
	}
	if err := copySimData(opts, rec.spec); err != nil {
		return ReplayResult{}, err
	}
	out, runErr := evalrun.Run(ctx, ecfg)
	if runErr == nil {
		runErr = evalrun.InRecordedOrder(filepath.Join(opts.Out, report.ResultsFile), rec.lines)
	}
	ev := &EvalReplay{Benchmark: rec.spec.Benchmark, Pairs: out.Ran, Misses: evalrun.LocateMisses(player.Misses(), rec.items)}
	res := ReplayResult{Calls: player.Calls(), Eval: ev}
	if err := farm.WriteJSONLines(filepath.Join(opts.Out, ReplayMissesFile), ev.Misses); err != nil {
		return res, err
	}
	if runErr != nil {
		return res, fmt.Errorf("replay of the eval stopped: %w", runErr)
	}
	logger.Info("replayed", "from", opts.From, "out", opts.Out, "pairs", ev.Pairs, "calls", res.Calls, "misses", len(ev.Misses))
	return res, nil
}

// openRecordedEval opens a copy of the recorded eval's store and reads its
// spec, configuration, items and results; what it cannot read is a
// configuration error. The store, when opened, is returned even with an
// error, for the caller to close.
func openRecordedEval(ctx context.Context, opts ReplayOptions) (recordedEval, error) {
	var rec recordedEval
	if _, err := os.Stat(filepath.Join(opts.From, StoreFile)); err != nil {
		return rec, invalid(evalrun.NoRecording(opts.From))
	}
	rec.src = &farm.RecordedStore{}
	if err := rec.src.OpenCopy(ctx, filepath.Join(opts.From, StoreFile), filepath.Join(opts.From, StoreFile), backends.Open); err != nil {
		return rec, unreadableInvalid(err)
	}
	var err error
	if rec.spec, err = evalrun.ReadSpec(ctx, rec.src.Store, opts.From); err != nil {
		return rec, invalid(err)
	}
	if rec.cfg, err = ConfigFromRunRecord(rec.spec.Config); err != nil {
		return rec, invalid(fmt.Errorf("replay %s: %w", opts.From, err))
	}
	if rec.cfg.Gateway.Enabled() {
		return rec, invalid(fmt.Errorf("replay: %s is an eval of the gateway's external agents: their code is not ours to rerun", opts.From))
	}
	if rec.items, err = evalrun.RecordedItems(opts.From, rec.spec); err != nil {
		return rec, invalid(err)
	}
	if rec.lines, err = os.ReadFile(filepath.Join(opts.From, report.ResultsFile)); err != nil {
		return rec, invalid(fmt.Errorf("replay: %w", err))
	}
	return rec, nil
}

// copySimData copies the sim's questions of a recorded eval into the
// replay's folder, where the eval kept them.
func copySimData(opts ReplayOptions, spec evalrun.Spec) error {
	if spec.SimData == "" {
		return nil
	}
	dst := filepath.Join(opts.Out, filepath.FromSlash(spec.SimData))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return farm.CopyIfPresent(filepath.Join(opts.From, filepath.FromSlash(spec.SimData)), dst)
}
