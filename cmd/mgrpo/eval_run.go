package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/datasets"
	"github.com/mgrpo/mgrpo/bench/evalrun"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/farm"
)

// evalRunFlags are the flags of `mgrpo eval` itself (the runner), on top
// of the agent flags it shares with `mgrpo rollout`.
func evalRunFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "benchmark", Usage: "gaia, webwalkerqa, xbench or jsonl"},
		&cli.PathFlag{Name: "data", Usage: "benchmark file or folder (GAIA: metadata.jsonl/.parquet or its folder); with --sim and no --data, the sim web's questions in the benchmark's layout"},
		&cli.IntFlag{Name: "runs", Value: 1, Usage: "runs per question (Avg Pass@1 over runs, Pass@k)"},
		&cli.StringFlag{Name: "scorer", Value: "auto", Usage: "auto (the benchmark's published protocol), exact, judge or cascade"},
		&cli.StringSliceFlag{Name: "level", Usage: "GAIA levels to keep (repeat)"},
		&cli.BoolFlag{Name: "text-only", Usage: "drop questions with an attachment (GAIA's 103-question text-only subset)"},
		&cli.StringSliceFlag{Name: "ids", Usage: "question ids to keep"},
		&cli.IntFlag{Name: "limit", Usage: "at most this many questions"},
	}, agentFlags()...)
}

// runEval is the action of `mgrpo eval`: it runs the agents on a benchmark
// and writes results.jsonl, summary.json and report.md. Rerunning the same
// command continues an interrupted eval.
func runEval(c *cli.Context) error {
	cfg, err := loadRunConfig(c.Path("config"))
	if err != nil {
		return usageError{err}
	}
	overlayFlags(c, &cfg)
	benchmark, data := c.String("benchmark"), c.Path("data")
	var errs []error
	if benchmark == "" {
		errs = append(errs, errors.New("--benchmark: required (gaia, webwalkerqa, xbench or jsonl)"))
	}
	if cfg.Out == "" {
		errs = append(errs, errors.New("--out: required"))
	}
	if data == "" && !cfg.Sim {
		errs = append(errs, errors.New("--data: required without --sim"))
	}
	mode, err := rollout.ParseMode(cfg.Mode)
	if err != nil {
		errs = append(errs, err)
	} else if mode == rollout.ModeFrozenSub {
		errs = append(errs, errors.New("--mode frozen-sub is a training mode; evaluate with mgrpo or single"))
	}
	if err := errors.Join(errs...); err != nil {
		return usageError{fmt.Errorf("eval configuration:\n%w", err)}
	}
	logger := loggerOf(c)
	world, getenv, err := openWorld(&cfg, logger)
	if err != nil {
		return err
	}
	if world != nil {
		defer world.close()
		if data == "" {
			if benchmark == bench.XBench {
				return usagef("--sim cannot write xbench data (it is encrypted): give --data")
			}
			format := map[string]string{bench.GAIA: "gaia", bench.WebWalkerQA: "webwalkerqa"}[benchmark]
			if format == "" {
				format = "jsonl"
			}
			if data, err = writeSimTasks(world, cfg.Out, format); err != nil {
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
	st, err := buildAgents(c.Context, cfg, mode == rollout.ModeSingle, false, getenv, logger)
	if err != nil {
		return err
	}
	defer st.close()
	scorer, err := score.ForBenchmark(benchmark, c.String("scorer"), st.judge)
	if err != nil {
		return usageError{err}
	}
	progress := newProgressReporter(stderrOf(c), logger)
	ecfg := evalrun.Config{
		Benchmark: benchmark, Items: items, Runs: c.Int("runs"), Out: cfg.Out, Agent: st.agent(), Scorer: scorer,
		Concurrency: cfg.Concurrency, Seed: cfg.Seed, Grace: cfg.Grace.Duration, Logger: logger,
		OnProgress: func(p evalrun.Progress) {
			progress.report(farm.Progress{Step: 1, Done: p.Done, Total: p.Total, Errors: p.Errors,
				MeanReward: float64(p.Correct) / float64(max(p.Done, 1)), Rate: p.Rate})
		},
	}
	if err := ecfg.Validate(); err != nil {
		return usageError{err}
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
