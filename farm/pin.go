package farm

import (
	"context"

	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// pinning reports whether the run pins each step's rollouts to the
// versions the admission rule fixes (Training.PinVersions): only
// asynchronous fixed steps run here have updates while they run that a
// pin keeps out (Validate refuses the other combinations).
func (f *Farm) pinning() bool {
	t := f.cfg.Training
	return t != nil && t.PinVersions && t.MaxStaleness > 0
}

// scheduledVersions returns the versions step's rollouts are scheduled
// at: with pinning, those step t−1−S's training produced (the newest the
// admission rule guarantees, whatever else has trained by the time the
// step starts), else the current ones.
func (f *Farm) scheduledVersions(step int) (planner, executor int64) {
	if !f.pinning() {
		return f.policyVersions()
	}
	admitted := step - 1 - f.cfg.Training.MaxStaleness
	return f.versionAfter(rollout.RolePlanner, admitted), f.versionAfter(rollout.RoleExecutor, admitted)
}

// versionAfter returns role's version once step was trained: the version
// its training of step produced, or of the last step before it that
// trained the role; 0 (the base weights) before any.
func (f *Farm) versionAfter(role rollout.Role, step int) int64 {
	f.train.mu.Lock()
	defer f.train.mu.Unlock()
	for s := step; s >= 1; s-- {
		if v, ok := f.train.trained[s][role]; ok {
			return v
		}
	}
	return 0
}

// recordTrainedLocked notes the version role's training of step produced.
// t.mu must be held.
func (t *trainingState) recordTrainedLocked(step int, role rollout.Role, version int64) {
	if t.trained == nil {
		t.trained = map[int]map[rollout.Role]int64{}
	}
	if t.trained[step] == nil {
		t.trained[step] = map[rollout.Role]int64{}
	}
	t.trained[step][role] = version
}

// recordWrittenVersions takes the versions a resumed run's written steps
// trained to, for the pins of the steps still to run.
func (f *Farm) recordWrittenVersions(written map[int]store.StepRecord) {
	f.train.mu.Lock()
	defer f.train.mu.Unlock()
	for step, rec := range written {
		if rec.Summary == nil {
			continue
		}
		for role, tr := range rec.Summary.Training {
			f.train.recordTrainedLocked(step, rollout.Role(role), tr.Version)
		}
	}
}

// pinned returns ctx pinning the calls of task's trained roles to the
// versions task was scheduled at (llm.WithWeightVersionPin): the
// planner's client at the planner's version — in mode single the single
// agent's, which the executor endpoints serve — and the executors' at
// theirs. The clients are named by role (run names them so).
func (f *Farm) pinned(ctx context.Context, task rollout.RolloutTask) context.Context {
	if !f.pinning() {
		return ctx
	}
	for _, role := range f.cfg.Training.roles() {
		client, v := string(role), task.PolicyVersion
		switch {
		case role == rollout.RoleExecutor:
			v = task.ExecutorPolicyVersion
		case f.cfg.Mode == rollout.ModeSingle:
			client = string(rollout.RoleExecutor)
		}
		ctx = llm.WithWeightVersionPin(ctx, client, v)
	}
	return ctx
}
