package farm

import (
	"github.com/mgrpo/mgrpo/internal/problems"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/weightsync"
)

// Check reports what is wrong with t for mode, each problem naming its
// key and flag: each mode's trainers, the decoupled mode's sides, the
// loss, the asynchrony settings, the weight sync. storeless says the run
// keeps no store (store: none), queued that its rollouts run from the
// store's queue.
func (t TrainConfig) Check(mode rollout.Mode, storeless, queued bool) []error {
	var p problems.List
	switch t.Role {
	case "", string(rollout.RolePlanner):
		if t.PlannerTrainer == "" {
			p.Add("train.planner_trainer", "planner-trainer", "required: the %s trainer's URL (tinker+https://…, http://…, file://DIR)", trainedPlannerRole(mode))
		}
	case string(rollout.RoleExecutor):
		if t.ExecutorTrainer == "" {
			p.Add("train.executor_trainer", "executor-trainer", "required with --role executor: this side trains the executors")
		}
	default:
		p.Add("train.role", "role", "%q: want planner, executor, or empty (both sides in this process)", t.Role)
	}
	switch {
	case t.Role != "" && storeless:
		p.Add("store", "store", "none: the decoupled mode's two sides agree through the run's store; set --store (redis://… across machines)")
	case t.Role != "" && mode != rollout.ModeMGRPO:
		p.Add("train.role", "role", "mode %s trains one model: the decoupled mode splits mode mgrpo's two", mode)
	case t.Role == "" && mode == rollout.ModeMGRPO && t.ExecutorTrainer == "":
		p.Add("train.executor_trainer", "executor-trainer", "required in mode mgrpo (both models are trained); use --mode frozen-sub to train the planner only, or --role planner with an executor side in another process")
	case t.Role == string(rollout.RolePlanner) && t.ExecutorTrainer != "":
		p.Add("train.executor_trainer", "executor-trainer", "with --role planner the executor side trains the executors: remove it here")
	case mode != rollout.ModeMGRPO && t.ExecutorTrainer != "":
		p.Add("train.executor_trainer", "executor-trainer", "mode %s trains no executor: remove it, or use --mode mgrpo", mode)
	}
	if t.PlannerTrainer != "" && t.Role != string(rollout.RoleExecutor) && t.BaseModelPlanner == "" {
		p.Add("train.base_model_planner", "base-model-planner", "required: the base model the trainer starts from")
	}
	if t.ExecutorTrainer != "" && t.Role != string(rollout.RolePlanner) && t.BaseModelExecutor == "" {
		p.Add("train.base_model_executor", "base-model-executor", "required: the base model the executors' trainer starts from")
	}
	switch trainerbridge.Loss(t.Loss) {
	case "", trainerbridge.LossImportanceSampling, trainerbridge.LossPPO:
	default:
		p.Add("train.loss", "loss", "%q: want importance_sampling or ppo", t.Loss)
	}
	if t.ClipLow < 0 || t.ClipHigh < 0 || t.LearningRate < 0 || t.LoRARank < 0 {
		p.Add("train", "", "clip_low, clip_high, lr and lora_rank must not be negative")
	}
	if t.MaxStaleness < 0 {
		p.Add("train.max_staleness", "max-staleness", "%d: must not be negative (0: on-policy)", t.MaxStaleness)
	}
	if partial, err := ParsePartialRollouts(t.PartialRollouts); err != nil {
		p.Add("train.partial_rollouts", "partial-rollouts", "%q: want continue or restart", t.PartialRollouts)
	} else if partial == PartialRestart && t.MaxStaleness > 0 && queued {
		p.Add("train.partial_rollouts", "partial-rollouts", "restart: the rollouts run from the store's queue (--workers, or a shared store), and a worker's rollout cannot be restarted from here; use continue, or run the rollouts in this process (--workers -1 with a sqlite store)")
	}
	if t.MaxExtraDraws < 0 {
		p.Add("train.max_extra_draws", "max-extra-draws", "%d: must not be negative (0: batch_size)", t.MaxExtraDraws)
	}
	if t.StreamGroups && queued {
		p.Add("train.stream_groups", "stream-groups", "the rollouts run from the store's queue (--workers, or a shared store), which runs fixed steps; run the rollouts in this process (--workers -1 with a sqlite store)")
	}
	if t.StreamGroups && t.Role != "" {
		p.Add("train.stream_groups", "stream-groups", "not with --role (the decoupled mode trains fixed steps on both sides)")
	}
	if _, err := ParseStalePolicy(t.StalePolicy); err != nil {
		p.Add("train.stale_policy", "stale-policy", "%q: want drop or keep", t.StalePolicy)
	}
	switch t.WeightSync {
	case weightsync.KindSGLang, weightsync.KindVLLM, weightsync.KindNone:
	case "":
		p.Add("train.weight_sync", "weight-sync", "required: sglang, vllm or none (the trainer pushes the weights itself)")
	default:
		p.Add("train.weight_sync", "weight-sync", "%q: want sglang, vllm or none", t.WeightSync)
	}
	if t.WeightSync == weightsync.KindVLLM && (t.VLLMUpdatePath == "") == (len(t.VLLMUpdateCommand) == 0) {
		p.Add("train.vllm_update_path", "weight-update-path", "weight_sync vllm needs exactly one update action: the route each server loads weights from (with vllm_update_body), or vllm_update_command")
	}
	return p
}

// trainedPlannerRole names what the planner trainer trains in mode.
func trainedPlannerRole(mode rollout.Mode) string {
	if mode == rollout.ModeSingle {
		return "single agent's"
	}
	return "planner's"
}
