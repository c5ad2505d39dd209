package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/run"
)

// replayCommand reruns a recorded run's agents against its recording.
func replayCommand() *cli.Command {
	return &cli.Command{
		Name:      "replay",
		Usage:     "rerun a recorded run's or eval's agents (this mgrpo's code and prompts) against its recording, with no engine and no web",
		ArgsUsage: "RUN_DIR --out DIR [--store URL]",
		Description: "RUN_DIR must have been written with --record (mgrpo rollout; mgrpo train: on-policy,\n" +
			"--max-staleness with either --partial-rollouts, --stream-groups, or a decoupled run's planner side;\n" +
			"mgrpo eval). Every model call, tool call and judge answer is taken from the recording, and each step\n" +
			"runs the rollouts the recorded step ran (its groups, seeds and policy versions, read from RUN_DIR's\n" +
			"step files), not the replay's own timing: where the agents send the requests they sent then, DIR's\n" +
			"step files (samples, stats, rollouts.jsonl) come out byte-identical, and summary.jsonl too but for\n" +
			"its timings (an eval's results.jsonl, summary.json and report.md, apart from their latency fields).\n" +
			"At the first request the recording does not hold, that rollout (or eval item's run) stops, recorded\n" +
			"as failed, and the request is reported with its step, rollout (an eval: item and run), role and turn\n" +
			"and a diff against the request recorded there (DIR/replay-misses.jsonl too); the command then exits 1.",
		Flags: []cli.Flag{
			&cli.PathFlag{Name: "out", Usage: "the replayed run's `DIR` (must not exist, or be empty)", Required: true},
			&cli.StringFlag{Name: "store", Usage: "the recorded run's store `URL` as the run used it (redis://HOST:PORT/DB[?prefix=P], rediss://…, sqlite://PATH; password from MGRPO_STORE_PASSWORD); default RUN_DIR/store.db. Only read"},
			&cli.PathFlag{Name: "config", Usage: "YAML `FILE` whose prompts key replaces the recorded run's prompt templates"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("replay takes one run directory (mgrpo replay RUN_DIR --out DIR)")
			}
			opts := run.ReplayOptions{From: c.Args().First(), Out: c.Path("out"), Store: c.String("store"), Hooks: run.Hooks{Logger: loggerOf(c)}}
			if p := c.Path("config"); p != "" {
				file, err := run.LoadConfig(p)
				if err != nil {
					return err
				}
				opts.Prompts = file.Prompts
			}
			res, err := run.Replay(c.Context, opts)
			if err != nil && len(res.Misses) == 0 {
				return err
			}
			// A run the misses stopped (a step whose rollouts all failed)
			// still reports them: they are why it stopped.
			report := writeReplayReport(c.App.Writer, res)
			if err != nil {
				return fmt.Errorf("%w; %w", err, report)
			}
			return report
		},
	}
}

// writeReplayReport prints what the replay answered and every first
// request of a rollout the recording did not hold; it returns an error
// when there was one.
func writeReplayReport(w io.Writer, res run.ReplayResult) error {
	if res.Eval != nil {
		return writeEvalReplayReport(w, res)
	}
	rollouts := 0
	for _, s := range res.Summaries {
		rollouts += s.Rollouts
	}
	fmt.Fprintf(w, "replayed %d steps, %d rollouts: %d model calls answered from the recording\n", len(res.Summaries), rollouts, res.Calls)
	for _, m := range res.Misses {
		if m.Tool != "" {
			fmt.Fprintf(w, "\nnot recorded: a %s tool call\n%s", m.Tool, m.Diff)
			continue
		}
		step := fmt.Sprint(m.Step)
		if m.Draw > 0 {
			step += fmt.Sprintf(" (draw %d)", m.Draw)
		}
		fmt.Fprintf(w, "\nnot recorded: step %s, query %s, rollout %d, role %s, turn %d (%s)\n%s", step, m.Query, m.Rollout, m.Role, m.Turn, m.Trajectory, m.Diff)
	}
	if len(res.Misses) > 0 {
		return fmt.Errorf("replay: %d rollouts sent a request the recording does not hold (see above, and %s)", len(res.Misses), run.ReplayMissesFile)
	}
	return nil
}

// writeEvalReplayReport is writeReplayReport for an eval: the first
// request of each item's run the recording did not hold.
func writeEvalReplayReport(w io.Writer, res run.ReplayResult) error {
	ev := res.Eval
	fmt.Fprintf(w, "replayed the %s eval, %d runs of its items: %d model calls answered from the recording\n", ev.Benchmark, ev.Pairs, res.Calls)
	for _, m := range ev.Misses {
		if m.Item == "" {
			what := "a " + m.Tool + " tool call"
			if m.Tool == "" {
				what = "a " + m.Role + " request"
			}
			fmt.Fprintf(w, "\nnot recorded: %s\n%s", what, m.Diff)
			continue
		}
		fmt.Fprintf(w, "\nnot recorded: item %s, run %d, role %s, turn %d (%s)\n%s", m.Item, m.Run, m.Role, m.Turn, m.Trajectory, m.Diff)
	}
	if len(ev.Misses) > 0 {
		return fmt.Errorf("replay: %d runs of the eval's items sent a request the recording does not hold (see above, and %s)", len(ev.Misses), run.ReplayMissesFile)
	}
	return nil
}
