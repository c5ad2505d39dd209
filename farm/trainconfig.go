package farm

// TrainConfig configures a training run (mgrpo train) as its
// configuration holds it (YAML keys in `yaml` tags, documented in `doc`
// tags; the composition root reads the file and the flags): one trainer
// per trained role, the loss and optimizer they apply, and how new
// weights reach the endpoints (BuildTraining).
type TrainConfig struct {
	PlannerTrainer    string  `yaml:"planner_trainer" flag:"planner-trainer" doc:"the planner's trainer URL (the single agent's in mode single): tinker+https://…, http(s)://… (docs/trainer-api.md) or file://DIR"`
	ExecutorTrainer   string  `yaml:"executor_trainer" flag:"executor-trainer" doc:"the executors' trainer URL (mode mgrpo)"`
	BaseModelPlanner  string  `yaml:"base_model_planner" flag:"base-model-planner" doc:"the planner's base model as the trainer names it (e.g. Qwen/Qwen3-8B)"`
	BaseModelExecutor string  `yaml:"base_model_executor" flag:"base-model-executor" doc:"the executors' base model"`
	LoRARank          int     `yaml:"lora_rank" flag:"lora-rank" zero:"the trainer's" doc:"LoRA rank"`
	Loss              string  `yaml:"loss" flag:"loss" zero:"importance_sampling" doc:"importance_sampling or ppo"`
	ClipLow           float64 `yaml:"clip_low" flag:"clip-low" zero:"0.2" doc:"PPO clip below 1"`
	ClipHigh          float64 `yaml:"clip_high" flag:"clip-high" zero:"0.2" doc:"PPO clip above 1"`
	LearningRate      float64 `yaml:"lr" flag:"lr" zero:"1e-5" doc:"Adam learning rate"`
	WeightSync        string  `yaml:"weight_sync" flag:"weight-sync" doc:"how new weights reach the endpoints: sglang, vllm or none (the trainer pushes them)"`
	WeightsPath       string  `yaml:"weights_path" flag:"weights-path" doc:"template of the path the servers load: {ref} (the trainer's reference), {name}, {role}, {step}, {version}"`
	APIKeyEnv         string  `yaml:"api_key_env" doc:"environment variable holding the trainers' API key (default: the backend's, e.g. TINKER_API_KEY)"`
	// VLLMUpdate is the vLLM sync's update action: an HTTP call
	// (path and JSON body templates) or a command, run on each endpoint.
	VLLMUpdatePath    string   `yaml:"vllm_update_path" flag:"weight-update-path" doc:"weight_sync vllm: the route (or URL template) each endpoint loads new weights from, between /pause and /resume"`
	VLLMUpdateBody    string   `yaml:"vllm_update_body" flag:"weight-update-body" doc:"weight_sync vllm: its JSON body template, e.g. {\"model_path\": \"{path}\"}"`
	VLLMUpdateCommand []string `yaml:"vllm_update_command" flag:"weight-update-command" doc:"weight_sync vllm: instead of the route, a command run per endpoint: [prog, {endpoint}, {path}]"`
	VersionPath       string   `yaml:"version_path" flag:"weight-version-path" doc:"the GET route reporting an endpoint's weight_version, to verify a sync (sglang: found by itself; vllm: e.g. /weight_info)"`
	MaxStaleness      int      `yaml:"max_staleness" flag:"max-staleness" doc:"asynchronous training: the rollouts of up to N later steps run while a step trains and syncs, so a batch is at most N versions behind its trainer (0: strictly on-policy)"`
	PartialRollouts   string   `yaml:"partial_rollouts" zero:"continue" flag:"partial-rollouts" json:",omitempty" doc:"asynchronous training: the rollouts in flight at a weight update continue on the new weights (continue, the default; each turn keeps the version that served it) or start again at the new version (restart)"`
	StalePolicy       string   `yaml:"stale_policy" zero:"drop" flag:"stale-policy" json:",omitempty" doc:"asynchronous training: a query whose samples are more than max_staleness versions behind their trainer is dropped from that role's batch (drop, the default) or trained (keep); counted either way"`
	StreamGroups      bool     `yaml:"stream_groups" flag:"stream-groups" json:",omitempty" doc:"asynchronous training: a step is the first batch_size groups whose K rollouts are in, not a fixed set of queries, so it never waits for its slowest rollout; every group still trains within max_staleness steps (off: fixed steps)"`
	MaxExtraDraws     int      `yaml:"max_extra_draws" zero:"batch_size" flag:"max-extra-draws" json:",omitempty" doc:"stream_groups with drop_zero_variance: the groups of equal rewards a step discards and replaces by further draws, at most (0: batch_size)"`
	Role              string   `yaml:"role" flag:"role" doc:"decoupled mode: planner (rollouts and the planner's training) or executor (the executors' training, following the run in the shared store); empty: both in this process"`
}
