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
		ArgsUsage: "RUN_DIR --out DIR",
		Description: "RUN_DIR must have been written with --record (mgrpo rollout, train or eval). Every model call, tool\n" +
			"call and judge answer is taken from the recording: where the agents send the requests they sent then,\n" +
			"DIR's files come out byte-identical (an eval's results.jsonl, summary.json and report.md, apart from\n" +
			"their latency fields, the replay's own wall-clock). At the first request the recording does not hold,\n" +
			"that rollout (or eval item's run) stops, recorded as failed, and the request is reported with its step,\n" +
			"rollout (an eval: item and run), role and turn and a diff against the request recorded there\n" +
			"(DIR/replay-misses.jsonl too); the command then exits 1.",
		Flags: []cli.Flag{
			&cli.PathFlag{Name: "out", Usage: "the replayed run's `DIR` (must not exist, or be empty)", Required: true},
			&cli.PathFlag{Name: "config", Usage: "YAML `FILE` whose prompts key replaces the recorded run's prompt templates"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("replay takes one run directory (mgrpo replay RUN_DIR --out DIR)")
			}
			opts := run.ReplayOptions{From: c.Args().First(), Out: c.Path("out"), Hooks: run.Hooks{Logger: loggerOf(c)}}
			if p := c.Path("config"); p != "" {
				file, err := run.LoadConfig(p)
				if err != nil {
					return err
				}
				opts.Prompts = file.Prompts
			}
			res, err := run.Replay(c.Context, opts)
			if err != nil {
				return err
			}
			return writeReplayReport(c.App.Writer, res)
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
		fmt.Fprintf(w, "\nnot recorded: step %d, query %s, rollout %d, role %s, turn %d (%s)\n%s", m.Step, m.Query, m.Rollout, m.Role, m.Turn, m.Trajectory, m.Diff)
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
