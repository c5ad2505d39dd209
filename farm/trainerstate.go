package farm

import (
	"context"
	"errors"
	"fmt"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// A trainer that keeps state on its side (trainerbridge.Resumer: a Tinker
// session, model and request sequence numbers) has that state saved in the
// store with every step it trained, as a step file, before the step shows
// as trained. A restarted run restores the state of its last trained step
// before starting the trainer, so a step trained again replays the very
// requests the trainer already answered and nothing is trained twice.

// trainerStateFile names the step file of role's trainer state.
func trainerStateFile(role rollout.Role) string { return "trainer-state-" + string(role) + ".json" }

// captureTrainerState returns role's trainer state after a step, nil for a
// trainer that keeps none.
func captureTrainerState(t trainerbridge.Trainer, role rollout.Role) ([]byte, error) {
	r, ok := t.(trainerbridge.Resumer)
	if !ok {
		return nil, nil
	}
	state, err := r.ResumeState()
	if err != nil {
		return nil, fmt.Errorf("the %s trainer's state: %w", role, err)
	}
	return state, nil
}

// saveTrainerState stores role's state as trained with step.
func (a *storeAccess) saveTrainerState(ctx context.Context, run string, role rollout.Role, step int, state []byte) error {
	if state == nil {
		return nil
	}
	return a.retry(ctx, fmt.Sprintf("save the %s trainer's state of step %d", role, step), func(ctx context.Context) error {
		return a.store.PutStepFile(ctx, run, step, trainerStateFile(role), state)
	})
}

// SavedTrainerState returns the state role's trainer had after step, nil
// when none was saved (a trainer that keeps none, or step 0).
func SavedTrainerState(ctx context.Context, st store.Store, run string, role rollout.Role, step int) ([]byte, error) {
	if step < 1 {
		return nil, nil
	}
	state, err := st.StepFile(ctx, run, step, trainerStateFile(role))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return state, err
}

// LastTrainedStep returns the last step role's trainer trained in the
// run, as the store says: the step published by the role's side
// (ROLE.trained_step), 0 when none.
func LastTrainedStep(ctx context.Context, st store.Store, run string, role rollout.Role) (int, error) {
	v, err := st.PolicyVersion(ctx, run, string(role)+TrainedStepSuffix)
	return int(v), err
}

// TrainerStatesToResume returns, for a resumed run, the saved state of
// each role's trainer: the one saved with the last step that role trained
// (a trainer restored to it answers a step it trained from its state, and
// replays an earlier one exactly). Roles without a saved state are absent.
func TrainerStatesToResume(ctx context.Context, st store.Store, run string, roles []rollout.Role) (map[rollout.Role][]byte, error) {
	out := map[rollout.Role][]byte{}
	for _, role := range roles {
		step, err := LastTrainedStep(ctx, st, run, role)
		if err != nil {
			return nil, err
		}
		state, err := SavedTrainerState(ctx, st, run, role, step)
		if err != nil {
			return nil, err
		}
		if state != nil {
			out[role] = state
		}
	}
	return out, nil
}
