package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/datasets"
	"github.com/mgrpo/mgrpo/bench/evalrun"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/farm"
	"github.com/mgrpo/mgrpo/run"
)

// evalRunFlags are the flags of `mgrpo eval` itself (the runner), on top
// of the agent flags it shares with `mgrpo rollout`.
func evalRunFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "benchmark", Usage: "gaia, webwalkerqa, xbench or jsonl"},
		&cli.PathFlag{Name: "data", Usage: "benchmark file or folder (GAIA: metadata.jsonl/.parquet or its folder); with --sim and no --data, the sim web's questions in the benchmark's layout"},
		&cli.IntFlag{Name: "runs", Value: 1, Usage: "runs per question (Avg Pass@1 over runs, Pass@k)"},
		&cli.StringFlag{Name: "scorer", Value: score.Auto, Usage: "auto (the benchmark's published protocol), exact, judge or cascade"},
		&cli.StringSliceFlag{Name: "level", Usage: "GAIA levels to keep (repeat)"},
		&cli.BoolFlag{Name: "text-only", Usage: "drop questions with an attachment (GAIA's 103-question text-only subset)"},
		&cli.StringSliceFlag{Name: "ids", Usage: "question ids to keep"},
		&cli.IntFlag{Name: "limit", Usage: "at most this many questions (0: all)"},
	}, agentFlags()...)
}

// simDataFormat is the layout `--sim` writes the sim web's questions in for
// a benchmark; "" for benchmarks it cannot write.
func simDataFormat(benchmark string) string {
	switch benchmark {
	case bench.GAIA:
		return "gaia"
	case bench.WebWalkerQA:
		return "webwalkerqa"
	case bench.JSONL:
		return "jsonl"
	}
	return ""
}

// checkEval reports every problem of an eval's command line at once, with
// how to fix each, before anything starts.
func checkEval(cfg run.Config, benchmark, data, scorer string) error {
	var errs []error
	if benchmark == "" {
		errs = append(errs, errors.New("--benchmark: required (gaia, webwalkerqa, xbench or jsonl)"))
	}
	if cfg.Out == "" {
		errs = append(errs, errors.New("--out: required"))
	}
	switch {
	case data == "" && !cfg.Sim:
		errs = append(errs, errors.New("--data: required without --sim"))
	case data == "" && benchmark == bench.XBench:
		errs = append(errs, errors.New("--data: xbench needs its published file (it is encrypted, so --sim cannot write it): give --data PATH/DeepSearch-2505.csv"))
	}
	if benchmark != "" && len(cfg.Judge.URLs) == 0 {
		if _, err := score.ForBenchmark(benchmark, scorer, nil); err != nil {
			hint := "give --judge-url URL --judge-model NAME"
			if cfg.Sim {
				hint += ", or --judge-url sim to let the simulated model judge"
			}
			errs = append(errs, fmt.Errorf("--benchmark %s: %w: %s", benchmark, err, hint))
		}
	}
	mode, err := rollout.ParseMode(cfg.Mode)
	if err != nil {
		errs = append(errs, fmt.Errorf("--mode: %w", err))
	} else if mode == rollout.ModeFrozenSub {
		errs = append(errs, errors.New("--mode frozen-sub is a training mode; evaluate with mgrpo or single"))
	}
	errs = append(errs, cfg.CheckTimeouts())
	if err := errors.Join(errs...); err != nil {
		return usageError{fmt.Errorf("eval configuration:\n%w", err)}
	}
	return nil
}

// runEval is the action of `mgrpo eval`: it runs the agents on a benchmark
// and writes results.jsonl, summary.json and report.md. Rerunning the same
// command continues an interrupted eval.
func runEval(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	benchmark, data, scorerName := c.String("benchmark"), c.Path("data"), c.String("scorer")
	if err := checkEval(cfg, benchmark, data, scorerName); err != nil {
		return err
	}
	logger := loggerOf(c)
	reg, metrics, err := startMetrics(c.String("metrics-addr"), logger)
	if err != nil {
		return err
	}
	defer metrics.stop()
	world, err := run.StartSim(&cfg, logger)
	if err != nil {
		return err
	}
	var simData string
	if world != nil {
		defer world.Close()
		if data == "" {
			// The questions go to a scratch folder first and reach --out only
			// once everything is checked.
			tmp, err := os.MkdirTemp("", "mgrpo-eval-sim-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			simData = simDataPath(benchmark)
			data = filepath.Join(tmp, simData)
			if err := writeSimTasks(world, data, simDataFormat(benchmark)); err != nil {
				return err
			}
		}
	}
	items, err := datasets.Load(benchmark, data, bench.Filter{
		Levels: c.StringSlice("level"), TextOnly: c.Bool("text-only"), IDs: c.StringSlice("ids"), Limit: c.Int("limit"),
	})
	if err != nil {
		return usageError{err}
	}
	mode, _ := rollout.ParseMode(cfg.Mode)
	st, err := run.Build(c.Context, cfg, run.Options{Single: mode == rollout.ModeSingle, Getenv: run.Getenv(world), Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	defer st.Close()
	scorer, err := score.ForBenchmark(benchmark, scorerName, st.Judge)
	if err != nil {
		return usageError{err}
	}
	progress := newProgressReporter(consoleOf(c), logger)
	ecfg := evalrun.Config{
		Benchmark: benchmark, Items: items, Runs: c.Int("runs"), Out: cfg.Out, Agent: st.Agent(), Scorer: scorer,
		Concurrency: cfg.Concurrency, Seed: cfg.Seed, Grace: cfg.Grace.Duration, Logger: logger,
		OnProgress: func(p evalrun.Progress) {
			progress.report(farm.Progress{Step: 1, Done: p.Done, Total: p.Total, Errors: p.Errors,
				MeanReward: float64(p.Correct) / float64(max(p.Done, 1)), Rate: p.Rate})
		},
	}
	if err := ecfg.Validate(); err != nil {
		return usageError{err}
	}
	if world != nil && simData != "" {
		if err := writeSimTasks(world, filepath.Join(cfg.Out, simData), simDataFormat(benchmark)); err != nil {
			return err
		}
	}
	out, runErr := evalrun.Run(c.Context, ecfg)
	progress.done()
	m := out.Summary.Overall
	w := c.App.Writer
	fmt.Fprintf(w, "%s: %d questions × %d runs (%d resumed, %d run now)\n", benchmark, m.Questions, m.Runs, out.Resumed, out.Ran)
	fmt.Fprintf(w, "Avg Pass@1 %.3f ± %.3f (min %.3f, max %.3f), Pass@%d %.3f, Best Pass@1 %.3f, majority vote %.3f\n",
		m.AvgPass1, m.Std, m.Min, m.Max, m.K, m.PassK, m.BestPass1, m.MajorityVote)
	fmt.Fprintf(w, "correct %d, wrong %d, errors %d, judge errors %d; report in %s\n", m.Correct, m.Wrong, m.Errors, m.JudgeErrors,
		strings.TrimSuffix(cfg.Out, "/")+"/report.md")
	if runErr != nil {
		return fmt.Errorf("eval stopped (run the same command again to continue): %w", runErr)
	}
	return nil
}

// simDataPath is where, relative to the eval's folder, the sim web's
// questions are written in a benchmark's layout.
func simDataPath(benchmark string) string {
	if benchmark == bench.GAIA {
		return filepath.Join("data", "metadata.jsonl")
	}
	return "tasks.jsonl"
}
