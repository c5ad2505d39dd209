package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
	_ "github.com/mgrpo/mgrpo/trainer_bridge/backends" // every trainer URL scheme
)

// CheckTraining reports what is wrong with c's training settings for mode
// (mgrpo train): each mode's trainers, the loss, the weight sync
// (farm.TrainConfig.Check), then the trained roles' sampling. An error
// wraps ErrConfig.
func (c Config) CheckTraining() error {
	mode, err := rollout.ParseMode(c.Mode)
	if err != nil {
		return nil // Validate reports the mode
	}
	queued, _ := c.Queue()
	if p := c.Train.Check(mode, c.StoreURL() == "", queued); len(p) > 0 {
		return fmt.Errorf("%w: train %w", ErrConfig, errors.Join(p...))
	}
	return c.CheckSampling(trainedRoles(mode, c.Train.Role))
}

// Training is a run's trainers and weight syncers, started
// (farm.StartedTraining).
type Training = farm.StartedTraining

// BuildTraining opens and starts c's trainers and builds the weight
// syncers of each trained role's endpoints (farm.BuildTraining); c's
// endpoints are those the run uses (after StartSim). resume holds the
// trainers' saved states of a resumed run (see
// farm.TrainerStatesToResume). A setting the trainers or the syncers
// cannot take wraps ErrConfig.
func BuildTraining(ctx context.Context, c Config, resume map[rollout.Role][]byte, logger *slog.Logger) (*Training, error) {
	mode, err := rollout.ParseMode(c.Mode)
	if err != nil {
		return nil, fmt.Errorf("%w: mode: %w", ErrConfig, err)
	}
	t, err := farm.BuildTraining(ctx, farm.TrainingSetup{Run: c.Run, Seed: c.Seed, Mode: mode, Train: c.Train,
		Planner: c.Planner, Executor: c.Executor}, resume, logger)
	if errors.Is(err, farm.ErrTrainingConfig) {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return t, err
}
