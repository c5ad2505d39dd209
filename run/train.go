package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	_ "github.com/mgrpo/mgrpo/trainer_bridge/backends" // every trainer URL scheme
	"github.com/mgrpo/mgrpo/trainer_bridge/weightsync"
)

// CheckTraining reports what is wrong with c's training settings for mode
// (mgrpo train): each mode's trainers, the loss, the weight sync. An error
// wraps ErrConfig.
func (c Config) CheckTraining() error {
	var p problems
	t := c.Train
	mode, err := rollout.ParseMode(c.Mode)
	if err != nil {
		return nil // Validate reports the mode
	}
	switch t.Role {
	case "", string(rollout.RolePlanner):
		if t.PlannerTrainer == "" {
			p.add("train.planner_trainer", "planner-trainer", "required: the %s trainer's URL (tinker+https://…, http://…, file://DIR)", trainedPlannerRole(mode))
		}
	case string(rollout.RoleExecutor):
		if t.ExecutorTrainer == "" {
			p.add("train.executor_trainer", "executor-trainer", "required with --role executor: this side trains the executors")
		}
	default:
		p.add("train.role", "role", "%q: want planner, executor, or empty (both sides in this process)", t.Role)
	}
	switch {
	case t.Role != "" && c.StoreURL() == "":
		p.add("store", "store", "none: the decoupled mode's two sides agree through the run's store; set --store (redis://… across machines)")
	case t.Role != "" && mode != rollout.ModeMGRPO:
		p.add("train.role", "role", "mode %s trains one model: the decoupled mode splits mode mgrpo's two", mode)
	case t.Role == "" && mode == rollout.ModeMGRPO && t.ExecutorTrainer == "":
		p.add("train.executor_trainer", "executor-trainer", "required in mode mgrpo (both models are trained); use --mode frozen-sub to train the planner only, or --role planner with an executor side in another process")
	case t.Role == string(rollout.RolePlanner) && t.ExecutorTrainer != "":
		p.add("train.executor_trainer", "executor-trainer", "with --role planner the executor side trains the executors: remove it here")
	case mode != rollout.ModeMGRPO && t.ExecutorTrainer != "":
		p.add("train.executor_trainer", "executor-trainer", "mode %s trains no executor: remove it, or use --mode mgrpo", mode)
	}
	if t.PlannerTrainer != "" && t.Role != string(rollout.RoleExecutor) && t.BaseModelPlanner == "" {
		p.add("train.base_model_planner", "base-model-planner", "required: the base model the trainer starts from")
	}
	if t.ExecutorTrainer != "" && t.Role != string(rollout.RolePlanner) && t.BaseModelExecutor == "" {
		p.add("train.base_model_executor", "base-model-executor", "required: the base model the executors' trainer starts from")
	}
	switch trainerbridge.Loss(t.Loss) {
	case "", trainerbridge.LossImportanceSampling, trainerbridge.LossPPO:
	default:
		p.add("train.loss", "loss", "%q: want importance_sampling or ppo", t.Loss)
	}
	if t.ClipLow < 0 || t.ClipHigh < 0 || t.LearningRate < 0 || t.LoRARank < 0 {
		p.add("train", "", "clip_low, clip_high, lr and lora_rank must not be negative")
	}
	if t.MaxStaleness < 0 {
		p.add("train.max_staleness", "max-staleness", "%d: must not be negative (0: on-policy)", t.MaxStaleness)
	}
	if partial, err := farm.ParsePartialRollouts(t.PartialRollouts); err != nil {
		p.add("train.partial_rollouts", "partial-rollouts", "%q: want continue or restart", t.PartialRollouts)
	} else if queued, _ := c.Queue(); partial == farm.PartialRestart && t.MaxStaleness > 0 && queued {
		p.add("train.partial_rollouts", "partial-rollouts", "restart: the rollouts run from the store's queue (--workers, or a shared store), and a worker's rollout cannot be restarted from here; use continue, or run the rollouts in this process (--workers -1 with a sqlite store)")
	}
	if t.MaxExtraDraws < 0 {
		p.add("train.max_extra_draws", "max-extra-draws", "%d: must not be negative (0: batch_size)", t.MaxExtraDraws)
	}
	if queued, _ := c.Queue(); t.StreamGroups && queued {
		p.add("train.stream_groups", "stream-groups", "the rollouts run from the store's queue (--workers, or a shared store), which runs fixed steps; run the rollouts in this process (--workers -1 with a sqlite store)")
	}
	if t.StreamGroups && t.Role != "" {
		p.add("train.stream_groups", "stream-groups", "not with --role (the decoupled mode trains fixed steps on both sides)")
	}
	if _, err := farm.ParseStalePolicy(t.StalePolicy); err != nil {
		p.add("train.stale_policy", "stale-policy", "%q: want drop or keep", t.StalePolicy)
	}
	switch t.WeightSync {
	case weightsync.KindSGLang, weightsync.KindVLLM, weightsync.KindNone:
	case "":
		p.add("train.weight_sync", "weight-sync", "required: sglang, vllm or none (the trainer pushes the weights itself)")
	default:
		p.add("train.weight_sync", "weight-sync", "%q: want sglang, vllm or none", t.WeightSync)
	}
	if t.WeightSync == weightsync.KindVLLM && (t.VLLMUpdatePath == "") == (len(t.VLLMUpdateCommand) == 0) {
		p.add("train.vllm_update_path", "weight-update-path", "weight_sync vllm needs exactly one update action: the route each server loads weights from (with vllm_update_body), or vllm_update_command")
	}
	if len(p) > 0 {
		return fmt.Errorf("%w: train %w", ErrConfig, errors.Join(p...))
	}
	return c.CheckSampling(trainedRoles(mode, t.Role))
}

// trainedPlannerRole names what the planner trainer trains in mode.
func trainedPlannerRole(mode rollout.Mode) string {
	if mode == rollout.ModeSingle {
		return "single agent's"
	}
	return "planner's"
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
