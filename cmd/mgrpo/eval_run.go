package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/evalrun"
	"github.com/mgrpo/mgrpo/bench/score"
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
		&cli.BoolFlag{Name: "replace", Usage: "rerun into an --out whose results cover questions or runs these settings leave out (another --limit, --ids, --level, --text-only, fewer --runs): the report is rewritten for these settings; results.jsonl keeps every line"},
	}, evalOutFlag(agentFlags())...)
}

// evalOutFlag replaces the run's --out, whose help describes a run's step
// folders, by one that says what eval writes.
func evalOutFlag(flags []cli.Flag) []cli.Flag {
	for i, f := range flags {
		if pf, ok := f.(*cli.PathFlag); ok && pf.Name == "out" {
			c := *pf
			c.Usage = "the eval's `DIR`: results.jsonl (one line per question and run), summary.json, report.md and accuracy.svg; rerun into it to continue"
			flags[i] = &c
		}
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "out" {
			c := *sf
			c.Usage = "the eval's `DIR`: results.jsonl (one line per question and run), summary.json, report.md and accuracy.svg; rerun into it to continue"
			flags[i] = &c
		}
	}
	return flags
}

// runEval is the action of `mgrpo eval`: it runs the agents on a benchmark
// and writes results.jsonl, summary.json and report.md. Rerunning the same
// command continues an interrupted eval.
func runEval(c *cli.Context) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	logger := loggerOf(c)
	reg, metrics, err := startMetrics(c.String("metrics-addr"), logger)
	if err != nil {
		return err
	}
	defer metrics.stop()
	progress := newProgressReporter(consoleOf(c), logger)
	started := false
	out, runErr := run.Eval(c.Context, cfg, run.EvalOptions{
		Benchmark: c.String("benchmark"), Data: c.Path("data"), Scorer: c.String("scorer"), Runs: c.Int("runs"),
		Filter: bench.Filter{Levels: c.StringSlice("level"), TextOnly: c.Bool("text-only"), IDs: c.StringSlice("ids"), Limit: c.Int("limit")}, Replace: c.Bool("replace"),
		OnProgress: func(p evalrun.Progress) {
			progress.report(run.Progress{Step: 1, Done: p.Done, Total: p.Total, Errors: p.Errors,
				MeanReward: float64(p.Correct) / float64(max(p.Done, 1)), Rate: p.Rate})
		},
		Hooks: run.Hooks{Logger: logger, Registerer: reg, OnStart: func() { started = true }},
	})
	progress.done()
	if !started {
		return runErr
	}
	benchmark := c.String("benchmark")
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
