package farm

import (
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// goodTrain is a TrainConfig Check accepts in mode mgrpo.
func goodTrain() TrainConfig {
	return TrainConfig{PlannerTrainer: "file:///p", ExecutorTrainer: "file:///e", BaseModelPlanner: "P", BaseModelExecutor: "E", WeightSync: "none"}
}

func TestTrainConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		name             string
		mode             rollout.Mode
		edit             func(*TrainConfig)
		storeless, queue bool
		want             []string // each problem's start, in order
	}{
		{"accepted", rollout.ModeMGRPO, func(*TrainConfig) {}, false, false, nil},
		{"mgrpo needs the executors' trainer", rollout.ModeMGRPO, func(t *TrainConfig) { t.ExecutorTrainer, t.BaseModelExecutor = "", "" }, false, false,
			[]string{"train.executor_trainer (--executor-trainer): required in mode mgrpo"}},
		{"single names its trainer the single agent's", rollout.ModeSingle, func(t *TrainConfig) { t.PlannerTrainer, t.ExecutorTrainer = "", "" }, false, false,
			[]string{"train.planner_trainer (--planner-trainer): required: the single agent's trainer's URL"}},
		{"the decoupled mode needs a store", rollout.ModeMGRPO, func(t *TrainConfig) { t.Role, t.ExecutorTrainer = "planner", "" }, true, false,
			[]string{"store (--store): none: the decoupled mode's two sides agree through the run's store"}},
		{"every problem at once", rollout.ModeMGRPO, func(t *TrainConfig) {
			t.Loss, t.WeightSync, t.MaxStaleness, t.StreamGroups = "dpo", "", -1, true
		}, false, true, []string{
			`train.loss (--loss): "dpo": want importance_sampling or ppo`,
			"train.max_staleness (--max-staleness): -1: must not be negative",
			"train.stream_groups (--stream-groups): the rollouts run from the store's queue",
			"train.weight_sync (--weight-sync): required: sglang, vllm or none",
		}},
		{"restart cannot reach a queued rollout", rollout.ModeMGRPO, func(t *TrainConfig) { t.PartialRollouts, t.MaxStaleness = "restart", 1 }, false, true,
			[]string{"train.partial_rollouts (--partial-rollouts): restart: the rollouts run from the store's queue"}},
		{"vllm sync needs one update action", rollout.ModeMGRPO, func(t *TrainConfig) { t.WeightSync = "vllm" }, false, false,
			[]string{"train.vllm_update_path (--weight-update-path): weight_sync vllm needs exactly one update action"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := goodTrain()
			tc.edit(&c)
			got := c.Check(tc.mode, tc.storeless, tc.queue)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %v, want %d", got, len(tc.want))
			}
			for i, err := range got {
				if !strings.HasPrefix(err.Error(), tc.want[i]) {
					t.Errorf("problem %d %q, want it to start %q", i, err, tc.want[i])
				}
			}
		})
	}
}
