package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/farm"
	"github.com/mgrpo/mgrpo/run"
	"github.com/mgrpo/mgrpo/store"
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
			&cli.DurationFlag{Name: "lease", Value: farm.DefaultLease, Usage: "lease of each claimed rollout, extended while it runs; a dead worker's rollouts are redone after it"},
			&cli.DurationFlag{Name: "grace", Value: farm.DefaultGrace, Usage: "time in-flight rollouts get to finish when the worker is stopped"},
			metricsFlag(),
		},
		Action: runWorker,
	}
}

// runWorker is the action of `mgrpo worker`.
func runWorker(c *cli.Context) error {
	logger := loggerOf(c)
	if n := c.Int("concurrency"); n < 1 {
		return usageError{fmt.Errorf("--concurrency %d: must be at least 1", n)}
	}
	if c.Duration("lease") < time.Second {
		return usageError{fmt.Errorf("--lease %v: must be at least 1s (it is extended every third of it)", c.Duration("lease"))}
	}
	ctx := c.Context
	cfg := run.DefaultConfig()
	cfg.Store = c.String("store")
	if err := run.CheckStoreURL(cfg.Store); err != nil || cfg.Store == "" || cfg.Store == run.StoreNone {
		return usageError{fmt.Errorf("--store %q: want redis://HOST:PORT/DB, rediss://… or sqlite://PATH", redact.URL(cfg.Store))}
	}
	st, err := run.OpenStore(ctx, cfg, os.Getenv)
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := findRun(ctx, st, c.String("run"))
	if err != nil {
		return err
	}
	spec, err := farm.ReadRunSpec(rec)
	if err != nil {
		return usageError{fmt.Errorf("--store %s: %w", redact.URL(cfg.Store), err)}
	}
	runCfg, err := run.ConfigFromRunRecord(spec.Config)
	if err != nil {
		return usageError{fmt.Errorf("--store %s: run %q: %w", redact.URL(cfg.Store), rec.ID, err)}
	}
	runCfg.Concurrency, runCfg.Grace, runCfg.Store = c.Int("concurrency"), run.Duration{Duration: c.Duration("grace")}, cfg.Store
	fc, err := runCfg.FarmConfig()
	if err != nil {
		return err
	}
	reg, metrics, err := startMetrics(c.String("metrics-addr"), logger)
	if err != nil {
		return err
	}
	defer metrics.stop()
	// A run on the simulated world reaches the coordinator's sim through
	// the URLs its record holds, with the key the sim's search accepts.
	stk, err := run.Build(ctx, runCfg, run.Options{Single: fc.Mode == rollout.ModeSingle, Capture: true,
		Getenv: run.SimGetenv(runCfg.Sim), Logger: logger, Registerer: reg, SharedCache: st})
	if err != nil {
		return err
	}
	defer stk.Close()
	stk.Configure(&fc)
	fc.Store, fc.Logger, fc.Metrics = st, logger, farm.NewMetrics(reg)
	w, err := farm.NewWorker(fc, spec.Tasks, farm.WorkerOptions{Name: c.String("name"), Lease: c.Duration("lease")})
	if err != nil {
		return err
	}
	logger.Info("worker started", "worker", w.Name(), "run", rec.ID, "store", redact.URL(cfg.Store), "concurrency", fc.Concurrency)
	if err := w.Serve(ctx); err != nil {
		return fmt.Errorf("worker %s: %w", w.Name(), err)
	}
	logger.Info("worker stopped", "worker", w.Name(), "cause", context.Cause(ctx))
	return nil
}

// findRun returns the record of the run named, or of the store's only run.
func findRun(ctx context.Context, st store.Store, name string) (store.RunRecord, error) {
	if name != "" {
		rec, err := st.Run(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return rec, usageError{fmt.Errorf("--run %q: no such run in the store (start it with `mgrpo rollout --store …`)", name)}
		}
		return rec, err
	}
	ids, err := st.RunIDs(ctx)
	if err != nil {
		return store.RunRecord{}, err
	}
	switch len(ids) {
	case 0:
		return store.RunRecord{}, usageError{errors.New("the store holds no run yet: start the coordinator (`mgrpo rollout --store …`) first, or name the run with --run")}
	case 1:
		return st.Run(ctx, ids[0])
	}
	slices.Sort(ids)
	return store.RunRecord{}, usageError{fmt.Errorf("the store holds %d runs (%s): choose one with --run", len(ids), strings.Join(ids, ", "))}
}
