package main

import (
	"errors"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/bench/evalcmd"
)

// evalCommand holds the evaluation tools that work on results and
// predictions.
func evalCommand() *cli.Command {
	return &cli.Command{
		Name:  "eval",
		Usage: "evaluate agents on GAIA, WebWalkerQA, xbench-DeepSearch or JSONL tasks; score predictions; compare runs",
		Description: "mgrpo eval --benchmark B --data PATH --runs N --out DIR [agent flags as mgrpo rollout] runs the\n" +
			"planner (--mode mgrpo) or the single agent (--mode single) on every question and writes results.jsonl,\n" +
			"summary.json and report.md (with an accuracy chart). An interrupted eval continues when rerun.\n\n" +
			"With --sim and no --data, the sim web's questions are written in the benchmark's layout (gaia,\n" +
			"webwalkerqa, jsonl); xbench needs --data (its published file is encrypted). webwalkerqa and xbench\n" +
			"are scored by an LLM judge, as their protocols say: give --judge-url URL --judge-model NAME, or with\n" +
			"--sim, --judge-url sim (the simulated model plays the judge).",
		Flags:  evalRunFlags(),
		Action: runEval,
		Subcommands: []*cli.Command{
			{
				Name:  "score",
				Usage: "score one prediction (prints correct or incorrect) or a JSONL file of predictions (adds \"correct\"); exit 0 whatever the verdicts",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "benchmark", Value: "jsonl", Usage: "gaia, webwalkerqa, xbench or jsonl: picks the published scoring protocol"},
					&cli.StringFlag{Name: "scorer", Value: "auto", Usage: "auto, exact, judge or cascade"},
					&cli.StringFlag{Name: "prediction", Usage: "the predicted answer"},
					&cli.StringFlag{Name: "answer", Usage: "the gold answer"},
					&cli.StringFlag{Name: "question", Usage: "the question (judges use it)"},
					&cli.StringFlag{Name: "file", Usage: "JSONL `FILE` with prediction, answer and optional question per line (- for stdin); written back to stdout with correct added"},
					&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "cases scored at once in file mode"},
				}, judgeFlags()...),
				Action: func(c *cli.Context) error {
					judge, closeJudge, err := judgeModel(c)
					if err != nil {
						return err
					}
					defer closeJudge()
					if c.String("file") == "" && (!c.IsSet("prediction") || !c.IsSet("answer")) {
						return usagef("give --prediction and --answer, or --file")
					}
					return evalcmd.Score(c.Context, evalcmd.ScoreOptions{
						Benchmark: c.String("benchmark"), Method: c.String("scorer"),
						Prediction: c.String("prediction"), Answer: c.String("answer"), Question: c.String("question"),
						File: c.String("file"), Judge: judge, Concurrency: c.Int("concurrency"),
					}, os.Stdin, c.App.Writer)
				},
			},
			{
				Name:      "compare",
				Usage:     "per-question differences between two eval runs and a paired bootstrap interval for the accuracy difference (B − A)",
				ArgsUsage: "DIR_A DIR_B",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "resamples", Value: 10000, Usage: "bootstrap resamples"},
					&cli.Float64Flag{Name: "confidence", Value: 0.95, Usage: "confidence level of the interval"},
					&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "bootstrap seed"},
					&cli.BoolFlag{Name: "json", Usage: "print JSON instead of text (every changed question)"},
					&cli.IntFlag{Name: "limit", Value: 20, Usage: "changed questions listed, largest change first (0: all)"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return usagef("eval compare takes two result directories, got %d arguments", c.NArg())
					}
					err := evalcmd.Compare(c.Args().Get(0), c.Args().Get(1), evalcmd.CompareOptions{
						Resamples: c.Int("resamples"), Level: c.Float64("confidence"), Seed: c.Uint64("seed"), JSON: c.Bool("json"), Limit: c.Int("limit"),
						Warn: func(msg string) { loggerOf(c).Warn(msg) },
					}, c.App.Writer)
					if errors.Is(err, evalcmd.ErrNothingInCommon) {
						return usageError{err}
					}
					return err
				},
			},
			{
				Name:      "report",
				Usage:     "rewrite summary.json, report.md and the accuracy chart of an eval directory from its results.jsonl",
				ArgsUsage: "DIR",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usagef("eval report takes one result directory, got %d arguments", c.NArg())
					}
					return evalcmd.Report(c.Args().Get(0), c.App.Writer)
				},
			},
		},
	}
}
