package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/run"
)

// runJob runs a rollout or training job with the terminal's progress bar
// and step table, and the metrics server when --metrics-addr asks for one.
func runJob(c *cli.Context, out string, job func(run.Hooks) ([]rollout.StepSummary, error)) error {
	logger := loggerOf(c)
	reg, metrics, err := startMetrics(c.String("metrics-addr"), logger)
	if err != nil {
		return err
	}
	defer metrics.stop()
	progress := newProgressReporter(consoleOf(c), logger)
	table := &stepTable{w: c.App.Writer, progress: progress, width: newConsole(c.App.Writer).width()}
	var start time.Time
	_, err = job(run.Hooks{Logger: logger, Registerer: reg, OnProgress: progress.report, OnStep: table.row,
		OnStart: func() { start = time.Now() }})
	progress.done()
	if !start.IsZero() {
		table.end(out, time.Since(start))
	}
	return err
}
