package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// WorkerOptions configure Worker: which run of which store it serves and
// how many rollouts it runs at once.
type WorkerOptions struct {
	// Store is the run's store URL (redis://…, rediss://… or sqlite://PATH).
	Store string
	// Run names the run to serve (empty: the store's only run).
	Run string
	// Concurrency is how many rollouts the worker runs at once.
	Concurrency int
	// Name names the worker in leases and logs (empty: host-pid).
	Name string
	// Lease is each claimed rollout's lease (at least 1s).
	Lease time.Duration
	// Grace is how long in-flight rollouts may finish once ctx is done.
	Grace time.Duration
	Hooks
}

// Worker is `mgrpo worker`: it reads the run's configuration and tasks
// from the store, builds the same agents and tools, and serves the run's
// queue until ctx is done.
func Worker(ctx context.Context, opts WorkerOptions) error {
	logger := opts.logger()
	if opts.Concurrency < 1 {
		return invalid(fmt.Errorf("--concurrency %d: must be at least 1", opts.Concurrency))
	}
	if opts.Lease < time.Second {
		return invalid(fmt.Errorf("--lease %v: must be at least 1s (it is extended every third of it)", opts.Lease))
	}
	cfg := DefaultConfig()
	cfg.Store = opts.Store
	if err := CheckStoreURL(cfg.Store); err != nil || cfg.Store == "" || cfg.Store == StoreNone {
		return invalid(fmt.Errorf("--store %q: want redis://HOST:PORT/DB, rediss://… or sqlite://PATH", redact.URL(cfg.Store)))
	}
	st, err := OpenStore(ctx, cfg, os.Getenv)
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := findRun(ctx, st, opts.Run)
	if err != nil {
		return err
	}
	spec, err := farm.ReadRunSpec(rec)
	if err != nil {
		return invalid(fmt.Errorf("--store %s: %w", redact.URL(cfg.Store), err))
	}
	runCfg, err := ConfigFromRunRecord(spec.Config)
	if err != nil {
		return invalid(fmt.Errorf("--store %s: run %q: %w", redact.URL(cfg.Store), rec.ID, err))
	}
	runCfg.Concurrency, runCfg.Grace, runCfg.Store = ConcurrencyOf(opts.Concurrency), Duration{Duration: opts.Grace}, cfg.Store
	// A run on the simulated world reaches the coordinator's sim through
	// the URLs its record holds, with the key the sim's search accepts.
	bopts := Options{Single: runCfg.Mode == string(rollout.ModeSingle), Capture: true, Probe: !runCfg.Sim,
		Getenv: SimGetenv(runCfg.Sim), Logger: logger, Registerer: opts.Registerer, SharedCache: st}
	if runCfg.Record {
		// A recorded run's workers record the rollouts they run, into the
		// run's store, so that mgrpo replay finds every answer.
		bopts.Recorder = replay.NewRecorder(st, logger)
	}
	stack, err := Build(ctx, runCfg, bopts)
	if err != nil {
		return err
	}
	defer stack.Close()
	fc, _, err := runCfg.farmConfig(ctx, farmParts{stack: stack, store: st, hooks: Hooks{Logger: logger, Registerer: opts.Registerer}})
	if err != nil {
		return err
	}
	w, err := farm.NewWorker(fc, spec.Tasks, farm.WorkerOptions{Name: opts.Name, Lease: opts.Lease})
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

// findRun returns the record of the run named, or of the store's only run
// (farm.FindRun); a run the store does not hold is a configuration error.
func findRun(ctx context.Context, st store.Store, name string) (store.RunRecord, error) {
	rec, err := farm.FindRun(ctx, st, name)
	if errors.Is(err, farm.ErrNoRun) {
		err = invalid(err)
	}
	return rec, err
}
