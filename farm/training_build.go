package farm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/weightsync"
)

// ErrTrainingConfig marks a training setting the trainers' weight sync
// cannot take (a configuration error of the run, not a server down). The
// error's text is its cause's alone.
var ErrTrainingConfig = errors.New("training configuration")

// trainingConfigError is an ErrTrainingConfig whose message is its cause's.
type trainingConfigError struct{ err error }

func (e trainingConfigError) Error() string   { return e.err.Error() }
func (e trainingConfigError) Unwrap() []error { return []error{e.err, ErrTrainingConfig} }

// TrainingSetup is what BuildTraining opens: the run's name, seed and
// mode, its training settings and the endpoints of the trained roles (as
// the run uses them: after the sim started, when it did).
type TrainingSetup struct {
	Run               string
	Seed              uint64
	Mode              rollout.Mode
	Train             TrainConfig
	Planner, Executor llm.EndpointConfig
}

// StartedTraining is a run's trainers and weight syncers, started: the
// farm's Training and the trainers Close ends.
type StartedTraining struct {
	Training
	trainers []trainerbridge.Trainer
}

// Close ends the trainers' sessions.
func (t *StartedTraining) Close() {
	for _, tr := range t.trainers {
		tr.Close()
	}
}

// BuildTraining opens and starts s's trainers (with train.role, only that
// side's; the planner side then waits for the executor side as a peer) (a
// base model a trainer does not serve is reported here, before any
// rollout) and builds the weight syncers of each trained role's
// endpoints: the planner's, the executors', and in mode single the single
// agent's (the executor endpoints). resume holds the trainers' saved
// states of a resumed run (see TrainerStatesToResume), restored before
// Start. A weight sync the settings cannot build wraps ErrTrainingConfig.
func BuildTraining(ctx context.Context, s TrainingSetup, resume map[rollout.Role][]byte, logger *slog.Logger) (*StartedTraining, error) {
	c := s.Train
	t := &StartedTraining{Training: Training{Trainers: map[rollout.Role]trainerbridge.Trainer{}, Syncers: map[rollout.Role]Syncer{},
		MaxStaleness: c.MaxStaleness, PartialRollouts: PartialRollouts(c.PartialRollouts), StalePolicy: StalePolicy(c.StalePolicy),
		StreamGroups: c.StreamGroups, MaxExtraDraws: c.MaxExtraDraws}}
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()
	sides, peers := trainingSides(s)
	t.Peers = peers
	for _, side := range sides {
		if err := t.openSide(ctx, s, side, resume[side.role], logger); err != nil {
			return nil, err
		}
	}
	ok = true
	return t, nil
}

// trainingSide is one trained role: its trainer, base model, servers
// and sampling temperature.
type trainingSide struct {
	role      rollout.Role
	url, base string
	endpoints []string
	// temperature is the sampling temperature of the role's samples
	// (nil: the server's, sent as 1).
	temperature *float64
}

// trainingSides returns the roles s trains and the peers (roles trained
// elsewhere) of a one-sided training.
func trainingSides(s TrainingSetup) ([]trainingSide, []rollout.Role) {
	c := s.Train
	planner := trainingSide{rollout.RolePlanner, c.PlannerTrainer, c.BaseModelPlanner, s.Planner.URLs, s.Planner.Temperature}
	if s.Mode == rollout.ModeSingle {
		planner.endpoints, planner.temperature = s.Executor.URLs, s.Executor.Temperature
	}
	executor := trainingSide{rollout.RoleExecutor, c.ExecutorTrainer, c.BaseModelExecutor, s.Executor.URLs, s.Executor.Temperature}
	switch c.Role {
	case string(rollout.RolePlanner):
		return []trainingSide{planner}, []rollout.Role{rollout.RoleExecutor}
	case string(rollout.RoleExecutor):
		return []trainingSide{executor}, nil
	}
	sides := []trainingSide{planner}
	if s.Mode == rollout.ModeMGRPO {
		sides = append(sides, executor)
	}
	return sides, nil
}

// openSide opens the trainer of side (resumed from state when the run
// saved one), checks it before any rollout, and adds its weight syncer.
func (t *StartedTraining) openSide(ctx context.Context, s TrainingSetup, side trainingSide, state []byte, logger *slog.Logger) error {
	c := s.Train
	temperature := 0.0
	if side.temperature != nil {
		temperature = *side.temperature
	}
	tr, err := OpenTrainer(ctx, side.url, trainerbridge.Options{Run: s.Run, Role: side.role, BaseModel: side.base,
		LoRARank: c.LoRARank, Seed: int64(s.Seed), Loss: trainerbridge.Loss(c.Loss),
		ClipLow: c.ClipLow, ClipHigh: c.ClipHigh, Adam: trainerbridge.AdamParams{LearningRate: c.LearningRate},
		APIKeyEnv: c.APIKeyEnv, Temperature: temperature}, state, logger)
	if err != nil {
		return err
	}
	t.trainers = append(t.trainers, tr)
	t.Trainers[side.role] = tr
	if c.WeightSync == weightsync.KindNone {
		return nil
	}
	sy, err := NewSyncer(c.WeightSync, side.endpoints, weightsync.Options{PathTemplate: c.WeightsPath,
		VersionPath: c.VersionPath, Update: weightsync.UpdateAction{Path: c.VLLMUpdatePath,
			Body: c.VLLMUpdateBody, Command: c.VLLMUpdateCommand}}, c.MaxStaleness)
	if err != nil {
		return trainingConfigError{fmt.Errorf("%s weight sync: %w", side.role, err)}
	}
	if err := sy.Check(ctx); err != nil {
		return fmt.Errorf("%s weight sync, before any rollout: %w", side.role, err)
	}
	t.Syncers[side.role] = sy
	return nil
}
