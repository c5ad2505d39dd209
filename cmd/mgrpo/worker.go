package main

import (
	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/run"
)

// workerCommand serves the rollouts of a run from its store's queue.
func workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "run rollouts of a run from its shared store's queue (start `mgrpo rollout --store URL` as the coordinator)",
		Description: "Claims rollout tasks of the run with leases, builds the agents and tools from the run's configuration\n" +
			"in the store, runs them and stores their results, until stopped (Ctrl-C or SIGTERM: no new claims,\n" +
			"in-flight rollouts get the grace period). A killed worker loses nothing: its leases expire and other\n" +
			"workers redo its rollouts with the same seeds. API keys come from this process's environment.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "store", Required: true, Usage: "the run's store `URL` (redis://[user@]HOST:PORT/DB, password from " + run.EnvStorePassword + "; or sqlite://PATH on the coordinator's machine)"},
			&cli.StringFlag{Name: "run", Usage: "run `NAME` to serve (default: the store's only run)"},
			&cli.IntFlag{Name: "concurrency", Value: 64, Usage: "rollouts this worker runs at once"},
			&cli.StringFlag{Name: "name", Usage: "worker `NAME` in leases and logs (default: host-pid)"},
			&cli.DurationFlag{Name: "lease", Value: run.DefaultLease, Usage: "lease of each claimed rollout, extended while it runs; a dead worker's rollouts are redone after it"},
			&cli.DurationFlag{Name: "grace", Value: run.DefaultGrace, Usage: "time in-flight rollouts get to finish when the worker is stopped"},
			metricsFlag(),
		},
		Action: runWorker,
	}
}

// runWorker is the action of `mgrpo worker`.
func runWorker(c *cli.Context) error {
	logger := loggerOf(c)
	reg, metrics, err := startMetrics(c.String("metrics-addr"), logger)
	if err != nil {
		return err
	}
	defer metrics.stop()
	return run.Worker(c.Context, run.WorkerOptions{Store: c.String("store"), Run: c.String("run"),
		Concurrency: c.Int("concurrency"), Name: c.String("name"), Lease: c.Duration("lease"), Grace: c.Duration("grace"),
		Hooks: run.Hooks{Logger: logger, Registerer: reg}})
}
