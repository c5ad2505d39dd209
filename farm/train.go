package farm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// Training makes a farm train on-policy: after each step's files are
// written, each trained role's samples go to that role's trainer (the two
// concurrently: no gradient crosses), the new weights go to that role's
// inference endpoints, and only then does the next step start, sampling
// with them. A role without a trainer is frozen.
type Training struct {
	// Trainers by role: RolePlanner trains the planner (the single agent
	// in mode single), RoleExecutor the executors. Started by the caller
	// (trainerbridge.Trainer.Start) before the run.
	Trainers map[rollout.Role]trainerbridge.Trainer
	// Syncers bring a role's new weights to its endpoints; a role without
	// one is not synced (its trainer pushes the weights itself).
	Syncers map[rollout.Role]Syncer
	// MaxStaleness S lets the rollouts of the next S steps run while a
	// step trains and syncs (0: strictly on-policy). Step t's rollouts
	// start once step t-1-S is trained, so a batch is sampled at most S
	// versions behind the trainer that trains it (see finisher).
	MaxStaleness int
	// PartialRollouts says what becomes of the rollouts in flight when a
	// step's new weights reach the servers ("": PartialContinue); only
	// with MaxStaleness > 0 are any in flight then.
	PartialRollouts PartialRollouts
	// StalePolicy says what becomes of samples more than MaxStaleness
	// versions behind their trainer ("": StaleDrop).
	StalePolicy StalePolicy
	// PinVersions schedules step t's rollouts (MaxStaleness S > 0) at the
	// versions step t−1−S's training produced, the newest the admission
	// rule guarantees, and has every call of theirs ask the servers for
	// those versions (llm.WithWeightVersionPin), so that the weights
	// synced while they run do not reach them and which version serves a
	// turn does not depend on timing. Only for servers that keep several
	// versions and honour the pin (the sim's); the turns record the
	// version the servers report either way. Not with PartialRestart,
	// StreamGroups, Queue or Peers.
	PinVersions bool
	// StreamGroups makes steps of the first groups to complete instead of
	// fixed ones: rollouts are drawn as numbered draws (a query and its K
	// seeds), admitted while draws started − groups discarded ≤
	// (MaxStaleness + trained steps + 1)·BatchSize, and a step ships as
	// soon as it holds BatchSize completed groups (see stream.go). Needs a
	// Store to resume; not with Queue or Peers.
	StreamGroups bool
	// MaxExtraDraws caps, per streamed step with DropZeroVariance, the
	// groups whose main rewards are all equal that are discarded and
	// replaced by further draws (0: DefaultMaxExtraDraws, one per query of
	// the batch).
	MaxExtraDraws int
	// Peers are roles another process trains (the decoupled mode, see
	// TrainSide): before each step's rollouts the farm waits, through the
	// store, until that process has trained the previous step, and samples
	// with the version it published.
	Peers []rollout.Role
}

// Syncer brings new weights to a role's inference endpoints and checks
// they serve them (trainer_bridge/weightsync implements it).
type Syncer interface {
	Sync(ctx context.Context, role, ref string, version int64, step int) error
}

// roles returns the trained roles in a fixed order.
func (t *Training) roles() []rollout.Role {
	var out []rollout.Role
	for _, r := range []rollout.Role{rollout.RolePlanner, rollout.RoleExecutor} {
		if t.Trainers[r] != nil {
			out = append(out, r)
		}
	}
	return out
}

// trainingState is what a training farm knows of its policies.
type trainingState struct {
	mu       sync.Mutex
	versions map[rollout.Role]int64
	// trained are the versions each step's training produced, by role
	// (for PinVersions).
	trained map[int]map[rollout.Role]int64
}

// policyVersions returns the versions the next step samples with.
func (f *Farm) policyVersions() (planner, executor int64) {
	if f.cfg.Training != nil {
		f.train.mu.Lock()
		defer f.train.mu.Unlock()
		return f.train.versions[rollout.RolePlanner], f.train.versions[rollout.RoleExecutor]
	}
	if f.cfg.PolicyVersions != nil {
		return f.cfg.PolicyVersions()
	}
	return 0, 0
}

// restoreTraining takes the versions and weights of the last written step
// of a resumed run and brings its weights to the endpoints again (the
// servers may have restarted since), before any rollout.
func (f *Farm) restoreTraining(ctx context.Context, last *rollout.StepSummary) error {
	if f.cfg.Training == nil || last == nil {
		return nil
	}
	for role, rec := range last.Training {
		r := rollout.Role(role)
		f.train.mu.Lock()
		f.train.versions[r] = rec.Version
		f.train.mu.Unlock()
		s := f.cfg.Training.Syncers[r]
		if s == nil || rec.Weights == "" {
			continue
		}
		f.log.Info("resumed run: syncing the last trained weights again", "role", role, "version", rec.Version, "weights", rec.Weights)
		if err := s.Sync(ctx, role, rec.Weights, rec.Version, last.Step); err != nil {
			return fmt.Errorf("resume: sync the %s weights of step %d (version %d): %w", role, last.Step, rec.Version, err)
		}
	}
	return nil
}

// trainedBatches returns an empty batch for each role this process trains.
func (f *Farm) trainedBatches() map[rollout.Role][]rollout.Sample {
	if f.cfg.Training == nil {
		return nil
	}
	out := map[rollout.Role][]rollout.Sample{}
	for _, r := range f.cfg.Training.roles() {
		out[r] = []rollout.Sample{}
	}
	return out
}

// awaitPeers waits, before the rollouts of step, until every peer role has
// trained the previous step, and takes the versions they published.
func (f *Farm) awaitPeers(ctx context.Context, step int) error {
	if f.cfg.Training == nil || step < 2 {
		return nil
	}
	for _, role := range f.cfg.Training.Peers {
		v, err := f.waitPeer(ctx, role, step-1)
		if err != nil {
			return err
		}
		f.train.mu.Lock()
		f.train.versions[role] = v
		f.train.mu.Unlock()
	}
	return nil
}

// trainStep trains the written step of sum on its samples, syncs the new
// weights and records it all in sum. A trainer that fails or a sync that
// fails stops the run; the step's files stay on disk, and a resumed run
// trains the step again (the trainers' idempotency keys make a batch
// already trained harmless). An interruption (ctx cancelled) gives the
// training in flight the run's grace period to finish before it is
// cancelled.
func (f *Farm) trainStep(ctx context.Context, out *stepOutcome) error {
	ctx, stop := withGrace(ctx, f.cfg.Grace)
	defer stop()
	t := f.cfg.Training
	sum := &out.summary
	step := sum.Step
	dir := f.stepFiles(step)
	roles := t.roles()
	records := make([]rollout.RoleTraining, len(roles))
	errs := make([]error, len(roles))
	start := time.Now()
	var wg sync.WaitGroup
	for i, role := range roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sampled := sum.PolicyVersion
			if role == rollout.RoleExecutor {
				sampled = sum.ExecutorPolicyVersion
			}
			records[i], errs[i] = f.trainRole(ctx, role, step, out.batches[role], sampled)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w (the step's samples stay in %s; fix the cause and continue with --resume)", err, cmp.Or(dir, "the step's files"))
	}
	sum.Training = map[string]rollout.RoleTraining{}
	for i, role := range roles {
		sum.Training[string(role)] = records[i]
		sum.TrainSeconds = max(sum.TrainSeconds, records[i].TrainSeconds)
		sum.SyncSeconds = max(sum.SyncSeconds, records[i].SyncSeconds)
	}
	f.log.Info("step trained", "step", step, "roles", len(roles), "seconds", time.Since(start).Seconds())
	return nil
}

// trainedRecordTimeout bounds recording a trained step in the store once
// the run is interrupted.
const trainedRecordTimeout = 30 * time.Second

// trainRole trains and syncs one role on the step's samples.
func (f *Farm) trainRole(ctx context.Context, role rollout.Role, step int, samples []rollout.Sample, sampled int64) (rollout.RoleTraining, error) {
	t := f.cfg.Training
	f.train.mu.Lock()
	version := f.train.versions[role]
	f.train.mu.Unlock()
	kept, stale := splitStale(samples, version, int64(t.MaxStaleness))
	if stale.samples > 0 {
		f.log.Warn("stale samples", "step", step, "role", role, "samples", stale.samples, "groups", stale.groups,
			"trainer_version", version, "max_staleness", t.MaxStaleness, "policy", cmp.Or(t.StalePolicy, StaleDrop))
	}
	if t.StalePolicy != StaleKeep {
		samples = kept
	} else {
		stale.dropped = 0
	}
	// Each sample's version is its trajectory's oldest turn's.
	sampled = oldestVersion(samples, sampled)
	rec := rollout.RoleTraining{Samples: len(samples), SampledVersion: sampled, PreviousVersion: version, Staleness: version - sampled,
		StaleSamples: stale.samples, StaleGroups: stale.groups, StaleDropped: stale.dropped, LossTokens: lossTokens(samples)}
	trained := time.Now()
	res, err := f.cfg.Training.Trainers[role].Train(ctx, trainerbridge.Batch{Run: f.cfg.Run, Role: role, Step: step, PolicyVersion: version, Samples: samples})
	if err != nil {
		return rec, fmt.Errorf("train step %d (%s, %d samples): %w", step, role, len(samples), err)
	}
	rec.TrainSeconds = time.Since(trained).Seconds()
	rec.Version, rec.Weights, rec.Metrics = res.Version, res.Weights, res.Metrics
	state, err := captureTrainerState(f.cfg.Training.Trainers[role], role)
	if err != nil {
		return rec, fmt.Errorf("step %d: %w", step, err)
	}
	// Under PartialRestart the rollouts in flight are cancelled before the
	// new weights serve and start again once they do.
	updating := t.PartialRollouts == PartialRestart && t.MaxStaleness > 0
	if updating {
		defer func() {
			if updating {
				f.restart.endUpdate()
			}
		}()
		if n := f.restart.beginUpdate(); n > 0 {
			f.log.Info("weight update: restarting the rollouts in flight", "step", step, "role", role, "rollouts", n)
		}
	}
	if s := f.cfg.Training.Syncers[role]; s != nil && res.Weights != "" {
		synced := time.Now()
		if err := s.Sync(ctx, string(role), res.Weights, res.Version, step); err != nil {
			return rec, fmt.Errorf("step %d: sync the %s weights (version %d, %s) to the endpoints: %w", step, role, res.Version, res.Weights, err)
		}
		rec.SyncSeconds = time.Since(synced).Seconds()
	}
	f.train.mu.Lock()
	f.train.versions[role] = res.Version
	f.train.recordTrainedLocked(step, role, res.Version)
	f.train.mu.Unlock()
	if updating {
		updating = false
		f.restart.endUpdate()
	}
	if f.st != nil {
		// The trainer has trained: recording it is not cut by the grace
		// period ending now (a resumed run would train the step again),
		// only by a store that stays unreachable.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), trainedRecordTimeout)
		defer cancel()
		// Before the version: a step shows as trained only with its state.
		if err := f.st.saveTrainerState(rctx, f.cfg.Run, role, step, state); err != nil {
			return rec, err
		}
		if err := f.st.retry(rctx, "publish the "+string(role)+" policy version", func(ctx context.Context) error {
			if err := f.st.store.SetPolicyVersion(ctx, f.cfg.Run, string(role), res.Version); err != nil {
				return err
			}
			return f.st.store.SetPolicyVersion(ctx, f.cfg.Run, string(role)+TrainedStepSuffix, int64(step))
		}); err != nil {
			return rec, err
		}
	}
	f.log.Info("role trained", "step", step, "role", role, "samples", len(samples), "version", res.Version,
		"weights", res.Weights, "train_seconds", rec.TrainSeconds, "sync_seconds", rec.SyncSeconds)
	return rec, nil
}

// lossTokens counts the batch's tokens under the loss mask, so that a
// trainer's summed loss can be read per token.
func lossTokens(samples []rollout.Sample) int {
	n := 0
	for _, s := range samples {
		for _, m := range s.LossMask {
			if m != 0 {
				n++
			}
		}
	}
	return n
}
