package farm

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// In the decoupled mode the planner side (rollouts, the planner's training)
// and the executor side (the executors' training) run as two processes,
// on two machines if need be, that agree through the run's store only:
//
//   - the planner side writes each step and its record (statistics, where
//     the files are) as always, then waits, before the next step's
//     rollouts, until the executor side has trained that step;
//   - the executor side follows the step records, trains each written
//     step's executor samples, syncs the executors' endpoints, and
//     publishes the new version and the step it trained.
//
// Both publish through the store's policy versions: ROLE the current
// version, ROLE + TrainedStepSuffix the last step trained. Either side may
// be restarted; each resumes from what the store says.

// TrainedStepSuffix names, after a role, the policy-version entry that
// holds the last step that role's trainer trained (decoupled mode).
const TrainedStepSuffix = ".trained_step"

// peerPoll is how often a side looks at the other's progress.
const peerPoll = 200 * time.Millisecond

// waitPeer waits until role's side has trained step (the decoupled
// planner side, before the rollouts of step+1) and returns role's version.
func (f *Farm) waitPeer(ctx context.Context, role rollout.Role, step int) (int64, error) {
	if f.st == nil {
		return 0, errors.New("decoupled training needs the run's store")
	}
	logged := false
	for {
		var trained, version int64
		err := f.st.retry(ctx, "read the "+string(role)+" side's progress", func(ctx context.Context) error {
			var err error
			if trained, err = f.st.store.PolicyVersion(ctx, f.cfg.Run, string(role)+TrainedStepSuffix); err != nil {
				return err
			}
			version, err = f.st.store.PolicyVersion(ctx, f.cfg.Run, string(role))
			return err
		})
		if err != nil {
			return 0, err
		}
		if trained >= int64(step) {
			return version, nil
		}
		if !logged {
			f.log.Info("waiting for the other side to train", "role", role, "step", step, "trained", trained)
			logged = true
		}
		t := time.NewTimer(peerPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("waiting for the %s side to train step %d: %w", role, step, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// SideConfig configures the executor side of a decoupled run.
type SideConfig struct {
	Store store.Store
	Run   string
	// Role is the side's role (RoleExecutor).
	Role    rollout.Role
	Trainer trainerbridge.Trainer
	// Syncer brings the new weights to the role's endpoints (nil: none).
	Syncer Syncer
	// Steps is the last step to train (0: until ctx ends).
	Steps int
	// MaxStaleness and StalePolicy are the run's (the planner side's):
	// a query whose samples are more than MaxStaleness versions behind this
	// side's trainer leaves the batch whole (StaleDrop, the default) or
	// is trained (StaleKeep); logged either way.
	MaxStaleness int
	StalePolicy  StalePolicy
	// Grace is how long the training in flight (train, sync, record) may
	// go on after ctx is cancelled; 0 means DefaultGrace.
	Grace  time.Duration
	Logger *slog.Logger
}

// TrainSide runs one side of a decoupled run: it follows the run's step
// records in the store and trains each written step's samples of its role,
// in step order, from the step after the last one it trained (a restarted
// side goes on where it stopped; a batch trained but not yet published is
// trained again, which the trainer's idempotency key makes harmless).
func TrainSide(ctx context.Context, cfg SideConfig) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &storeAccess{store: cfg.Store, log: log}
	role := string(cfg.Role)
	file := samplesFile(cfg.Role)
	var last int64
	if err := a.retry(ctx, "read the last trained step", func(ctx context.Context) error {
		var err error
		last, err = cfg.Store.PolicyVersion(ctx, cfg.Run, role+TrainedStepSuffix)
		return err
	}); err != nil {
		return err
	}
	log.Info("training side started", "run", cfg.Run, "role", role, "trained_through", last)
	for step := int(last) + 1; cfg.Steps == 0 || step <= cfg.Steps; step++ {
		rec, err := waitWritten(ctx, a, cfg.Run, step)
		if err != nil {
			return err
		}
		samples, source, err := stepSamples(ctx, a, cfg.Run, rec, file)
		if err != nil {
			return err
		}
		var version int64
		if err := a.retry(ctx, "read the "+role+" version", func(ctx context.Context) error {
			var err error
			version, err = cfg.Store.PolicyVersion(ctx, cfg.Run, role)
			return err
		}); err != nil {
			return err
		}
		if kept, stale := splitStale(samples, version, int64(cfg.MaxStaleness)); stale.samples > 0 {
			log.Warn("stale samples", "step", step, "role", role, "samples", stale.samples, "groups", stale.groups,
				"trainer_version", version, "max_staleness", cfg.MaxStaleness, "policy", cmp.Or(cfg.StalePolicy, StaleDrop))
			if cfg.StalePolicy != StaleKeep {
				samples = kept
			}
		}
		if err := trainSideStep(ctx, cfg, a, log, step, version, samples, source); err != nil {
			return err
		}
	}
	return nil
}

// trainSideStep trains, syncs and publishes one step of a decoupled side;
// once ctx is cancelled it gets cfg.Grace to finish.
func trainSideStep(ctx context.Context, cfg SideConfig, a *storeAccess, log *slog.Logger, step int, version int64, samples []rollout.Sample, source string) error {
	role := string(cfg.Role)
	ctx, stop := withGrace(ctx, cmp.Or(cfg.Grace, DefaultGrace))
	defer stop()
	start := time.Now()
	res, err := cfg.Trainer.Train(ctx, trainerbridge.Batch{Run: cfg.Run, Role: cfg.Role, Step: step, PolicyVersion: version, Samples: samples})
	if err != nil {
		return fmt.Errorf("train step %d (%s, %d samples): %w (fix the cause and start this side again)", step, role, len(samples), err)
	}
	trained := time.Since(start)
	if cfg.Syncer != nil && res.Weights != "" {
		if err := cfg.Syncer.Sync(ctx, role, res.Weights, res.Version, step); err != nil {
			return fmt.Errorf("step %d: sync the %s weights (version %d) to the endpoints: %w", step, role, res.Version, err)
		}
	}
	state, err := captureTrainerState(cfg.Trainer, cfg.Role)
	if err != nil {
		return fmt.Errorf("step %d: %w", step, err)
	}
	if err := a.saveTrainerState(ctx, cfg.Run, cfg.Role, step, state); err != nil {
		return err
	}
	// The version first: the other side reads it once the step shows
	// as trained.
	if err := a.retry(ctx, "publish the "+role+" version", func(ctx context.Context) error {
		if err := cfg.Store.SetPolicyVersion(ctx, cfg.Run, role, res.Version); err != nil {
			return err
		}
		return cfg.Store.SetPolicyVersion(ctx, cfg.Run, role+TrainedStepSuffix, int64(step))
	}); err != nil {
		return err
	}
	log.Info("role trained", "step", step, "role", role, "samples", len(samples), "samples_from", source, "version", res.Version,
		"weights", res.Weights, "train_seconds", trained.Seconds(), "metrics", res.Metrics)
	return nil
}

// stepSamples reads the step's samples of file from the store, where the
// planner side hands them over, or else from the step directory its record
// names (a shared filesystem).
func stepSamples(ctx context.Context, a *storeAccess, run string, rec store.StepRecord, file string) (samples []rollout.Sample, source string, err error) {
	var data []byte
	err = a.retry(ctx, fmt.Sprintf("read %s of step %d", file, rec.Step), func(ctx context.Context) error {
		var err error
		data, err = a.store.StepFile(ctx, run, rec.Step, file)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		path := filepath.Join(rec.Files, file)
		samples, err := rollout.ReadSamplesJSONL(path)
		if err != nil {
			return nil, "", fmt.Errorf("step %d: the store holds no %s and the step directory cannot be read: %w", rec.Step, file, err)
		}
		return samples, path, nil
	}
	if err != nil {
		return nil, "", err
	}
	samples, err = rollout.DecodeSamplesJSONL(bytes.NewReader(data), fmt.Sprintf("the store's %s of step %d", file, rec.Step))
	return samples, "store", err
}

// waitWritten waits until step's record says its files are written.
func waitWritten(ctx context.Context, a *storeAccess, run string, step int) (store.StepRecord, error) {
	for {
		var steps []store.StepRecord
		if err := a.retry(ctx, "read the run's steps", func(ctx context.Context) error {
			var err error
			steps, err = a.store.Steps(ctx, run)
			return err
		}); err != nil {
			return store.StepRecord{}, err
		}
		for _, s := range steps {
			if s.Step == step && s.Status == store.StepWritten && s.Files != "" {
				return s, nil
			}
		}
		t := time.NewTimer(peerPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return store.StepRecord{}, fmt.Errorf("waiting for step %d to be written: %w", step, context.Cause(ctx))
		case <-t.C:
		}
	}
}
