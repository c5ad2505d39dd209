package run

import (
	"path/filepath"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/trainer_bridge/weightsync"
)

// SimTrainer is the trainer URL that names the simulated world's own
// Tinker-shaped trainer: `mgrpo train --sim` without trainer URLs trains
// with it (see ApplySimTraining).
const SimTrainer = "sim"

// SimLearningRate is the default learning rate with the sim trainer. Its
// parameters are the logits of a few dozen decisions, not a network's
// weights, so the rate that moves them visibly in tens of steps is far
// above a LoRA's.
const SimLearningRate = 0.1

// SimCheckpointDir is the folder of --out where the sim trainer saves the
// weights the sim inference servers load.
const SimCheckpointDir = "sim-checkpoints"

// ApplySimTraining makes a `--sim` training run whose trainers are unset
// learn inside the simulated world: both roles train with the sim trainer
// (the planner only in modes frozen-sub and single), from the sim's model,
// and new weights reach the sim's inference servers through the sync of
// their dialect — SGLang's /update_weights_from_disk, or the vLLM
// dialect's /sim/update_weights verified by /weight_info. Settings given
// explicitly are kept. It reports whether it applied; a run with a trainer
// URL, or a decoupled side (train.role), is left alone.
func ApplySimTraining(c *Config) bool {
	t := &c.Train
	if !c.Sim || t.Role != "" || t.PlannerTrainer != "" || t.ExecutorTrainer != "" {
		return false
	}
	mode, err := rollout.ParseMode(c.Mode)
	if err != nil {
		return false // Validate reports the mode
	}
	t.PlannerTrainer = SimTrainer
	if mode == rollout.ModeMGRPO {
		t.ExecutorTrainer = SimTrainer
	}
	if t.BaseModelPlanner == "" {
		t.BaseModelPlanner = SimModel
	}
	if t.BaseModelExecutor == "" && t.ExecutorTrainer != "" {
		t.BaseModelExecutor = SimModel
	}
	if t.LearningRate == 0 {
		t.LearningRate = SimLearningRate
	}
	if t.WeightSync == "" {
		if c.Executor.Dialect == "sglang" {
			t.WeightSync = weightsync.KindSGLang
		} else {
			t.WeightSync = weightsync.KindVLLM
			t.VLLMUpdatePath = "/sim/update_weights"
			t.VLLMUpdateBody = `{"model_path": "{path}", "weight_version": "{version}"}`
			if t.VersionPath == "" {
				t.VersionPath = "/weight_info"
			}
		}
	}
	return true
}

// SimTraining reports whether c trains with the sim trainer.
func (c Config) SimTraining() bool {
	return c.Sim && (c.Train.PlannerTrainer == SimTrainer || c.Train.ExecutorTrainer == SimTrainer)
}

// pinsVersions reports whether c's rollouts are pinned to the versions
// the admission rule fixes (farm.Training.PinVersions): asynchronous fixed
// steps (max_staleness > 0, partial rollouts continue, not streamed) run
// by this process and trained inside the simulated world, whose inference
// servers keep several versions and honour the pin, so such a run is
// byte-identical on rerun. Runs against other servers, or the sim's with
// a trainer of their own, keep the documented continue: weights synced
// while a rollout runs reach its later turns.
func (c Config) pinsVersions() bool {
	queued, _ := c.Queue()
	return c.SimTraining() && c.Train.MaxStaleness > 0 && !c.Train.StreamGroups && c.Train.Role == "" && !queued &&
		farm.PartialRollouts(c.Train.PartialRollouts) != farm.PartialRestart
}

// simCheckpoints is where a sim training run's weights are saved.
func (c Config) simCheckpoints() string {
	return filepath.Join(c.Out, SimCheckpointDir)
}
