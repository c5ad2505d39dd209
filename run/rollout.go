package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/sim"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/backends"
)

// RolloutOptions say how Rollout and Train run beside the configuration.
type RolloutOptions struct {
	// Resume continues the run in the configuration's out directory (or
	// store): written steps are kept, stored rollouts are not redone.
	Resume bool
	// Force writes the run into an out directory that holds files that are
	// not a run's.
	Force bool
	// RebuildStore, with Resume, rebuilds the store's view of a run whose
	// store lost it (emptied, or a Redis back without its data) from the
	// step files in the out directory: the written steps are recorded as
	// written, with the statistics of their stats.jsonl and the summaries
	// of summary.jsonl, and not rerun.
	RebuildStore bool
	// Lease is the coordinator's lease (0: farm.DefaultLease): its lock on
	// the run, renewed every third of it, is taken over by another
	// coordinator that long after this process died; the rollouts it runs
	// itself from the queue are leased for as long.
	Lease time.Duration
	Hooks
}

// Rollout is `mgrpo rollout`: it validates cfg, starts the simulated world
// when asked, opens the run's store, builds the agents and runs the farm,
// returning the summaries of the steps written. Everything that can be
// checked is checked before the first rollout, and a configuration error
// (wrapping ErrConfig) leaves nothing on disk.
func Rollout(ctx context.Context, cfg Config, opts RolloutOptions) ([]rollout.StepSummary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rollout %w", err)
	}
	return execute(ctx, cfg, opts, false)
}

// execute builds the run of a validated configuration and runs the farm;
// train adds the trainers and weight syncers.
func execute(ctx context.Context, cfg Config, opts RolloutOptions, train bool) (summaries []rollout.StepSummary, err error) {
	logger, resume := opts.logger(), opts.Resume
	if cfg.Run == "" {
		cfg.Run = filepath.Base(filepath.Clean(cfg.Out))
	}
	if err := checkExecute(cfg, opts, train); err != nil {
		return nil, err
	}
	// What a run that fails before its first rollout created is removed,
	// so that a refused run leaves nothing on disk (its store first of all).
	started := false
	defer farm.RemoveUnlessStarted(cfg.Out, cfg.Store != "", &started)()
	outer := ctx
	ctx, runStore, release, err := openRunStore(ctx, cfg, opts, logger)
	if err != nil {
		return nil, err
	}
	defer release()
	if resume {
		if err := removePartialSteps(cfg, logger); err != nil {
			return nil, err
		}
	}
	// Before StartSim, which replaces the sim trainer's name by its URL.
	pin := train && cfg.pinsVersions()
	world, err := startRunWorld(&cfg, resume, logger)
	if err != nil {
		return nil, err
	}
	if world != nil {
		defer world.Close()
	}
	tasks, source, err := loadTasks(cfg, world)
	if err != nil {
		return nil, err
	}
	if err := checkResumedRun(ctx, runStore, resume, cfg, tasks); err != nil {
		return nil, err
	}
	// Too few tasks is reported with what Build finds, in one message.
	tasksErr := cfg.CheckTasks(tasks, source)
	bopts := Options{Single: cfg.Mode == string(rollout.ModeSingle), Capture: true, Probe: true,
		Getenv: Getenv(world), Logger: logger, Registerer: opts.Registerer}
	if runStore != nil {
		queued, local := cfg.Queue()
		logger.Info("run store", "store", redact.URL(cfg.StoreURL()), "queue", queued, "local_rollouts", local, "resume", resume)
		bopts.SharedCache = runStore
		if cfg.Record {
			bopts.Recorder = replay.NewRecorder(runStore, logger)
			defer logRecording(bopts.Recorder, &summaries)
		}
	}
	stack, err := Build(ctx, cfg, bopts)
	if err := upfront(tasksErr, err); err != nil {
		if stack != nil {
			stack.Close()
		}
		return nil, err
	}
	defer stack.Close()
	parts := farmParts{stack: stack, store: runStore, resume: resume, rebuild: opts.RebuildStore, lease: opts.Lease, hooks: opts.Hooks,
		sink: &rollout.DirSink{Dir: cfg.Out, Parquet: cfg.Format == "parquet"}}
	if train {
		if parts.training, err = runTraining(ctx, cfg, runStore, resume, pin, logger); err != nil {
			return nil, err
		}
		defer parts.training.Close()
	}
	f, err := newRunFarm(ctx, cfg, parts, tasks, world, logger)
	if err != nil {
		return nil, err
	}
	started = true
	if opts.OnStart != nil {
		opts.OnStart()
	}
	summaries, err = f.Run(ctx)
	return summaries, stoppedRun(ctx, outer, cfg, summaries, err)
}

// checkExecute checks the options of a run against its configuration:
// what cannot go together, and an out directory the run may write.
func checkExecute(cfg Config, opts RolloutOptions, train bool) error {
	resume := opts.Resume
	if resume && cfg.StoreURL() == "" {
		return invalid(errors.New("--resume: a run kept in memory (--store none) cannot be resumed; runs resume from their store"))
	}
	if opts.Lease != 0 && opts.Lease < time.Second {
		return invalid(fmt.Errorf("--lease %v: must be at least 1s (the run's lock is renewed every third of it)", opts.Lease))
	}
	if opts.RebuildStore && !resume {
		return invalid(errors.New("--rebuild-store rebuilds the store of a run being continued: add --resume"))
	}
	if opts.RebuildStore && train {
		return invalid(errors.New("--rebuild-store: a training run's trainer states and policy versions live only in its store, so its store cannot be rebuilt from the step files; start a new run in a new --out"))
	}
	if cfg.Record && cfg.StoreURL() == "" {
		return invalid(errors.New("--record: the recording is kept in the run's store, and --store none keeps none: drop one of them"))
	}
	storeFile, _ := backends.SQLitePath(cfg.StoreURL())
	out := farm.OutDir{Dir: cfg.Out, Resume: resume, Rebuild: opts.RebuildStore, Force: opts.Force,
		RunDirStore: cfg.Store == "", StoreFile: storeFile, Own: []string{SimCheckpointDir}}
	if err := out.Check(); err != nil {
		return invalid(err)
	}
	return nil
}

// openRunStore opens the run's store (nil with store: none) and locks the
// run before anything of the run is touched (a partial step directory
// removed, the sim's task file written): a second coordinator of the run
// stops here. The returned context ends when the lock is lost; release
// unlocks the run and closes the store.
func openRunStore(ctx context.Context, cfg Config, opts RolloutOptions, logger *slog.Logger) (context.Context, store.Store, func(), error) {
	runStore, err := OpenStore(ctx, cfg, os.Getenv)
	if err != nil {
		return ctx, nil, nil, err
	}
	if runStore == nil {
		return ctx, nil, func() {}, nil
	}
	ctx, lock, err := farm.LockRun(ctx, runStore, cfg.Run, opts.Lease, logger)
	if err != nil {
		runStore.Close()
		if errors.Is(err, store.ErrLocked) {
			return ctx, nil, nil, invalid(fmt.Errorf("the run's store (%s): %w", redact.URL(cfg.StoreURL()), err))
		}
		return ctx, nil, nil, err
	}
	// The store is closed after the stack, whose tools use it as their
	// cache: the caller defers release before building the stack.
	release := func() {
		lock.Release()
		runStore.Close()
	}
	if opts.Resume {
		if err := farm.CheckStoreHoldsRun(ctx, runStore, cfg.Run, cfg.Out, cfg.StoreURL(), opts.RebuildStore); err != nil {
			release()
			if errors.Is(err, farm.ErrRunMismatch) {
				err = invalid(err)
			}
			return ctx, nil, nil, err
		}
	}
	return ctx, runStore, release, nil
}

// removePartialSteps removes the step directories a stopped run left
// half written.
func removePartialSteps(cfg Config, logger *slog.Logger) error {
	removed, err := rollout.RemoveTempSteps(cfg.Out)
	if err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	if len(removed) > 0 {
		logger.Info("removed the partial step directories of the stopped run", "dirs", removed)
	}
	return nil
}

// startRunWorld starts the simulated world of a sim run (nil otherwise);
// a resumed sim run needs the world's usual ports.
func startRunWorld(cfg *Config, resume bool, logger *slog.Logger) (*sim.World, error) {
	world, err := StartSim(cfg, logger)
	if err != nil || world == nil {
		return world, err
	}
	if resume && world.WebHost != sim.DefaultWebAddr {
		world.Close()
		// The web's address is in the run's prompts and in its record:
		// resumed elsewhere, the run would not be the same run.
		return nil, fmt.Errorf("--sim --resume: the simulated world's usual ports (%s, %s, …) are held by another process, and a sim run resumes only on them (its web's address is in its prompts): stop that process (another mgrpo --sim or mgrpo sim) and resume again", sim.DefaultLLMAddr, sim.DefaultWebAddr)
	}
	return world, nil
}

// runTraining builds the trainers and weight syncers of a training run,
// from the trainers' saved states when it resumes; pin fixes the weight
// versions of each step's rollouts.
func runTraining(ctx context.Context, cfg Config, runStore store.Store, resume, pin bool, logger *slog.Logger) (*Training, error) {
	var states map[rollout.Role][]byte
	if resume && runStore != nil {
		var err error
		if states, err = farm.TrainerStatesToResume(ctx, runStore, cfg.Run, []rollout.Role{rollout.RolePlanner, rollout.RoleExecutor}); err != nil {
			return nil, fmt.Errorf("--resume: the trainers' saved state: %w", err)
		}
	}
	training, err := BuildTraining(ctx, cfg, states, logger)
	if err != nil {
		return nil, err
	}
	training.PinVersions = pin
	if pin {
		logger.Info("asynchronous training in the simulated world: each step's rollouts are served by the weight versions the staleness bound fixes, so a rerun writes the same bytes", "max_staleness", cfg.Train.MaxStaleness)
	}
	return training, nil
}

// newRunFarm builds the farm of the run's parts and tasks, and writes the
// sim's tasks into the run directory now that the run will start.
func newRunFarm(ctx context.Context, cfg Config, parts farmParts, tasks []farm.Task, world *sim.World, logger *slog.Logger) (*farm.Farm, error) {
	fc, correctness, err := cfg.farmConfig(ctx, parts)
	if err != nil {
		return nil, err
	}
	f, err := farm.New(fc, tasks)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if world != nil && cfg.Tasks == "" && !exists(filepath.Join(cfg.Out, "tasks.jsonl")) {
		// Written only now that the run will start, for the record of which
		// questions it asked.
		if err := WriteSimTasks(world, filepath.Join(cfg.Out, "tasks.jsonl"), "jsonl"); err != nil {
			return nil, err
		}
	}
	logger.Info("scoring", "r_correct", correctness)
	return f, nil
}

// stoppedRun says why a run stopped early (nil when err is): its lock
// lost (ctx's cause while outer goes on), or err, with how to continue
// when the run was interrupted.
func stoppedRun(ctx, outer context.Context, cfg Config, summaries []rollout.StepSummary, err error) error {
	if lost := context.Cause(ctx); err != nil && lost != nil && outer.Err() == nil {
		// The run lock stopped the run: taken over, or the store unusable.
		return fmt.Errorf("rollout stopped after %d of %d steps: %w", len(summaries), cfg.Steps, lost)
	}
	if err != nil {
		hint := ""
		if outer.Err() != nil && cfg.StoreURL() != "" {
			hint = " (the steps written are complete: continue the run with the same command and --resume)"
		}
		return fmt.Errorf("rollout stopped after %d of %d steps%s: %w", len(summaries), cfg.Steps, hint, err)
	}
	return nil
}

// logRecording says what the run's recording cost, once the run ends.
func logRecording(r *replay.Recorder, summaries *[]rollout.StepSummary) {
	rollouts := 0
	for _, s := range *summaries {
		rollouts += s.Rollouts
	}
	r.LogCost(rollouts)
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
