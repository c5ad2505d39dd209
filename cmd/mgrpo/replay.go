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
		Usage:     "rerun a recorded run's agents (this mgrpo's code and prompts) against its recording, with no engine and no web",
		ArgsUsage: "RUN_DIR --out DIR",
		Description: "RUN_DIR must have been written with --record. Every model call, tool call and judge answer is\n" +
			"taken from the recording: where the agents send the requests they sent then, DIR's files come out\n" +
			"byte-identical. At the first request the recording does not hold, that rollout stops (recorded as\n" +
			"failed) and the request is reported with its step, rollout, role and turn and a diff against the\n" +
			"request recorded there (DIR/replay-misses.jsonl too); the command then exits 1.",
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
