package main

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/run"
)

// reportCommand draws the curves of one or several runs.
func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "draw the per-step curves (rewards, accuracy, response length) of one or several runs as an SVG figure",
		ArgsUsage: "[--out FILE.svg] RUN_DIR [RUN_DIR…]",
		Description: "Reads each run directory's summary.jsonl (as `mgrpo rollout` writes it, steps written so far) and\n" +
			"draws one line per run in each panel. For an eval directory's chart, see mgrpo eval report.",
		Flags: []cli.Flag{
			&cli.PathFlag{Name: "out", Usage: "SVG `FILE` to write (- for standard output; default: curves.svg in the first RUN_DIR)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usagef("report takes one or more run directories")
			}
			var runs []report.RunCurve
			for _, dir := range c.Args().Slice() {
				steps, err := rollout.ReadSummaries(filepath.Join(dir, rollout.SummaryFile))
				if errors.Is(err, fs.ErrNotExist) {
					return usagef("%s: not a run directory (no %s; mgrpo rollout --out DIR writes one as its steps end)", dir, rollout.SummaryFile)
				}
				if err != nil {
					return usagef("%s: %w", dir, err)
				}
				if len(steps) == 0 {
					return usagef("%s: %s holds no step yet", dir, rollout.SummaryFile)
				}
				runs = append(runs, report.RunCurve{Name: filepath.Base(filepath.Clean(dir)), Steps: steps})
			}
			out := c.Path("out")
			if out == "" {
				out = filepath.Join(c.Args().First(), "curves.svg")
			}
			err := run.WriteOut(out, c.App.Writer, func(w io.Writer) error { return report.WriteCurves(w, runs) })
			if err == nil && out != "-" {
				loggerOf(c).Info("curves written", "file", out, "runs", len(runs))
			}
			return err
		},
	}
}
