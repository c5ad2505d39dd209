package farm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/internal/pool"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// Defaults of WorkerOptions.
const (
	// DefaultLease is how long a claimed rollout is held before another
	// worker may take it; holders extend it every third of it, so only a
	// worker that died (or lost the store that long) loses its leases.
	DefaultLease = 30 * time.Second
	// DefaultMaxAttempts dead-letters a rollout whose lease expired this
	// many times: a rollout that kills every worker taking it is recorded
	// as failed instead of killing them all.
	DefaultMaxAttempts = 3
)

// WorkerOptions tune a worker's claims.
type WorkerOptions struct {
	// Name names the worker in leases and logs (empty: host-pid).
	Name string
	// Lease is each claim's lease (0: DefaultLease).
	Lease time.Duration
	// MaxAttempts dead-letters a task after this many expired leases
	// (0: DefaultMaxAttempts).
	MaxAttempts int
}

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = host + "-" + strconv.Itoa(os.Getpid())
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	return o
}

// Worker claims rollout tasks of one run from the store's queue, runs them
// and stores their results: the body of `mgrpo worker`, and of the local
// rollouts of a coordinating farm.
type Worker struct {
	cfg     Config
	opts    WorkerOptions
	st      *storeAccess
	scoring Scoring
	tasks   map[string]Task
	log     *slog.Logger
}

// NewWorker returns a worker of the run cfg.Run in cfg.Store running
// cfg.Concurrency rollouts at once with cfg.Runner and cfg's scoring, for
// the run's tasks.
func NewWorker(cfg Config, tasks []Task, opts WorkerOptions) (*Worker, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("Store: nil; a worker serves a run of a store"))
	}
	if cfg.Run == "" {
		errs = append(errs, errors.New("Run: empty"))
	}
	if cfg.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("Concurrency %d: must be at least 1", cfg.Concurrency))
	}
	if cfg.Runner == nil {
		errs = append(errs, errors.New("Runner: nil"))
	}
	if cfg.Scorer == nil {
		errs = append(errs, errors.New("Scorer: nil"))
	}
	if len(tasks) == 0 {
		errs = append(errs, errors.New("tasks: none"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rollout worker: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	w := &Worker{cfg: cfg, opts: opts.withDefaults(), scoring: newScoring(cfg), tasks: make(map[string]Task, len(tasks)), log: log}
	w.st = &storeAccess{store: cfg.Store, log: log, retries: cfg.Failures.RolloutRetries}
	for _, t := range tasks {
		w.tasks[t.ID] = t
	}
	return w, nil
}

// Name returns the worker's name.
func (w *Worker) Name() string { return w.opts.Name }

// Serve claims and runs tasks until ctx ends. It then claims no more and
// gives the rollouts in flight the grace period to finish; those still
// running after it are abandoned, and their leases expire for other
// workers to take. It returns nil when stopped by ctx, or the error that
// stopped it (a store that answers but cannot serve the run, or one that
// lost it: ErrRunLost).
func (w *Worker) Serve(ctx context.Context) (err error) {
	// A store that loses the run stops the worker (ErrRunLost) instead of
	// leaving it claiming from a queue that is gone.
	ctx, endWatch, err := w.st.watchRun(ctx, w.cfg.Run, watchPeriod(w.opts.Lease))
	if err != nil {
		return err
	}
	defer func() { err = endWatch(err) }()
	// A rollout whose result the store cannot take (ErrUnusable: out of
	// memory, read-only, a full disk) stops the worker: retrying does not
	// cure it, and its lease expiring would only have it redone in vain.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w.log.Info("worker serving", "worker", w.opts.Name, "run", w.cfg.Run, "concurrency", w.cfg.Concurrency, "lease", w.opts.Lease)
	runs := pool.New(w.cfg.Concurrency).NewGroup(ctx, w.cfg.Grace, func(error) error {
		return fmt.Errorf("worker stopped: rollouts abandoned after the %v grace period", w.cfg.Grace)
	})
	defer runs.Close()
	var serveErr error
	for ctx.Err() == nil {
		// Wait for a free slot, then claim as many tasks as slots are free.
		if runs.Acquire() != nil {
			continue
		}
		free := 1
		for free < w.cfg.Concurrency && runs.TryAcquire() {
			free++
		}
		var leases []store.Lease
		err := w.st.retry(ctx, "claim rollout tasks", func(ctx context.Context) error {
			var err error
			leases, err = w.cfg.Store.Claim(ctx, store.ClaimRequest{Run: w.cfg.Run, Worker: w.opts.Name, Max: free,
				Lease: w.opts.Lease, Wait: time.Second, MaxAttempts: w.opts.MaxAttempts})
			return err
		})
		for range free - len(leases) {
			runs.Release()
		}
		if err != nil {
			if ctx.Err() == nil {
				serveErr = err
			}
			break
		}
		for _, l := range leases {
			runs.Start(func(runCtx context.Context) { w.serveLease(runCtx, ctx, l, stop) })
		}
	}
	if cause := context.Cause(ctx); serveErr == nil && errors.Is(cause, store.ErrUnusable) {
		serveErr = cause
	}
	runs.Stop(serveErr)
	if !runs.Drain() {
		w.log.Warn("worker stopped with rollouts in flight; their leases will expire for other workers", "worker", w.opts.Name)
	}
	return serveErr
}

// serveLease runs one claimed task, extending its lease while it runs,
// then stores its result and completes it. A lease lost to another worker
// stops the rollout: the other worker's result will count. A store that
// cannot take the result (store.ErrUnusable) stops the worker through
// stop. No retry of an infra rollout starts once serving ends (shutdown
// ends): the rollout is stored as a pending retry, for the next worker.
func (w *Worker) serveLease(ctx, shutdown context.Context, l store.Lease, stop context.CancelCauseFunc) {
	task := l.Task
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopExtend := make(chan struct{})
	extended := make(chan struct{})
	go func() {
		defer close(extended)
		t := time.NewTicker(w.opts.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-stopExtend:
				return
			case <-t.C:
			}
			nl, err := w.cfg.Store.Extend(ctx, l, w.opts.Lease)
			switch {
			case err == nil:
				l = nl
			case errors.Is(err, store.ErrLeaseLost):
				w.log.Warn("lease lost: another worker has the rollout", "rollout", task.ID(), "worker", w.opts.Name)
				cancel(fmt.Errorf("lease of %s lost: %w", task.ID(), err))
				return
			default:
				w.log.Warn("extending a lease failed; retrying at the next tick", "rollout", task.ID(), "error", err)
			}
		}
	}()
	w.cfg.Metrics.started()
	r := w.execute(ctx, shutdown, task)
	close(stopExtend)
	<-extended
	w.cfg.Metrics.finished(r.Failed(), digestOf(&r).kind())
	if context.Cause(ctx) != nil {
		return
	}
	if r.Failed() {
		w.log.Warn("rollout failed", "rollout", task.ID(), "error", firstLine(r.Error))
	}
	if _, err := w.st.putResult(ctx, &r); err != nil {
		if errors.Is(err, store.ErrUnusable) {
			stop(err)
			return
		}
		w.log.Error("storing a result failed; the lease will expire and the rollout be redone", "rollout", task.ID(), "error", err)
		return
	}
	if w.st.resultKey(&r) != task.ID() {
		// A pending retry (serving ended in the middle of the rollout's
		// retries): the task stays uncompleted, and the worker that
		// takes it once its lease expires continues the count.
		w.log.Info("rollout left in the middle of its retries: the next worker continues them", "rollout", task.ID(), "retries", r.Retries)
		return
	}
	if err := w.st.retry(ctx, "complete "+task.ID(), func(ctx context.Context) error { return w.cfg.Store.Complete(ctx, l) }); err != nil {
		w.log.Warn("completing a task failed; its result is stored and counts", "rollout", task.ID(), "error", err)
	}
}

// execute runs task, or records as failed a task whose query the run does
// not hold. A rollout another process left in the middle of its retries
// (its pending retry in the store) continues their count, and each infra
// run about to be retried is stored as a pending retry: a worker killed
// while it waits leaves the count for the one that takes the task next.
func (w *Worker) execute(ctx, shutdown context.Context, task rollout.RolloutTask) RolloutResult {
	t, ok := w.tasks[task.QueryID]
	if !ok {
		return failedResult(ctx, w.scoring, task, Task{ID: task.QueryID}, fmt.Sprintf("query %q is not among the run's tasks", task.QueryID))
	}
	prior, err := w.st.pendingDigest(ctx, task)
	if err != nil {
		w.log.Warn("reading a pending retry failed; the rollout's retries are counted from 0", "rollout", task.ID(), "error", err)
		prior = resultDigest{}
	}
	if !prior.Infra || prior.Retries >= w.cfg.Failures.RolloutRetries {
		prior = resultDigest{}
	}
	pending := func(r *RolloutResult) {
		if _, err := w.st.putResult(ctx, r); err != nil {
			w.log.Warn("storing a pending retry failed; a worker taking the rollout up would count its retries from the last one stored", "rollout", task.ID(), "error", err)
		}
	}
	return executeWithRetries(ctx, shutdown, w.cfg.Failures, prior, w.cfg.Metrics, w.log, pending, func(ctx context.Context) RolloutResult {
		return Execute(ctx, w.cfg.Runner, w.scoring, task, t)
	})
}

// failedResult is the result of a rollout that could not run, scored as
// every failed rollout is.
func failedResult(ctx context.Context, scoring Scoring, task rollout.RolloutTask, t Task, why string) RolloutResult {
	return Execute(ctx, failingRunner(why), scoring, task, t)
}

// failingRunner is a Runner whose rollouts fail with its text.
type failingRunner string

func (f failingRunner) Run(_ context.Context, _ rollout.RolloutTask, t Task) *agents.Rollout {
	return &agents.Rollout{Question: t.Question, Planner: &agents.Trajectory{Role: agents.RolePlanner, Task: t.Question, Error: string(f),
		FailureKind: failure.KindInfra, FailureCause: failure.CauseSetup}}
}
