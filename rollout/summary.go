package rollout

import (
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/tools/remote"
)

// StepSummary describes one completed step. Every field except the timings
// is a pure function of the step's results.
type StepSummary struct {
	Step int `json:"step"`
	// PolicyVersion is the policy version the step's rollouts were sampled
	// with.
	PolicyVersion int64 `json:"policy_version"`
	// Queries and Rollouts count the step's groups and rollouts;
	// FailedRollouts those recorded with an error (scored 0).
	Queries        int `json:"queries"`
	Rollouts       int `json:"rollouts"`
	FailedRollouts int `json:"failed_rollouts"`
	// MeanMainReward is the mean R_M over all rollouts; MeanSubReward the
	// mean R_S over all executor trajectories (before alignment), 0 when
	// the mode has no sub side or there were none.
	MeanMainReward float64 `json:"mean_main_reward"`
	MeanSubReward  float64 `json:"mean_sub_reward"`
	// Accuracy is the mean r_correct over all rollouts.
	Accuracy float64 `json:"accuracy"`
	// PlannerFormatValid and ExecutorFormatValid are the fractions of
	// planner (single) and executor trajectories with a valid format.
	PlannerFormatValid  float64 `json:"planner_format_valid"`
	ExecutorFormatValid float64 `json:"executor_format_valid"`
	// Executors counts executor trajectories; DHistogram maps d_k to the
	// number of rollouts that delegated d_k times.
	Executors  int         `json:"executors"`
	DHistogram map[int]int `json:"d_histogram"`
	// DBar is the d̄ the step was aligned to (0 without a sub side).
	DBar int `json:"dbar"`
	// Counters are the alignment and zero-variance counts.
	Counters StepCounters `json:"counters"`
	// PlannerSamples and ExecutorSamples count the samples written.
	PlannerSamples  int `json:"planner_samples"`
	ExecutorSamples int `json:"executor_samples"`
	// DriftEvents counts chat-template drift events (sequence splits);
	// SequenceErrors trajectories whose turns formed no sequences.
	DriftEvents    int `json:"drift_events"`
	SequenceErrors int `json:"sequence_errors"`
	// ScoreErrors and ExpertErrors count scorer and expert judge failures.
	ScoreErrors  int `json:"score_errors"`
	ExpertErrors int `json:"expert_errors"`
	// ToolCalls counts tool calls (delegations included); ToolErrors those
	// whose metadata carries a failure class, by class.
	ToolCalls  int            `json:"tool_calls"`
	ToolErrors map[string]int `json:"tool_errors"`
	// LLMCalls counts model calls (turns); PromptTokens and
	// CompletionTokens their tokens.
	LLMCalls         int   `json:"llm_calls"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// WallTime is the step's duration from scheduling to written files;
	// RolloutsPerSecond is Rollouts over the time the rollouts took.
	WallTime          time.Duration `json:"wall_time"`
	RolloutsPerSecond float64       `json:"rollouts_per_second"`
}

// Progress reports a running step, once per finished rollout.
type Progress struct {
	Step int
	// Done of Total rollouts of the step have finished.
	Done, Total int
	// MeanReward is the mean R_M of the finished rollouts.
	MeanReward float64
	// Errors counts finished rollouts that failed.
	Errors int
	// Rate is finished rollouts per second since the step started.
	Rate float64
}

// summarize fills the result-derived fields of a summary.
func summarize(sum *StepSummary, results []RolloutResult) {
	sum.Rollouts = len(results)
	sum.DHistogram = map[int]int{}
	sum.ToolErrors = map[string]int{}
	var mainSum, subSum, correctSum float64
	var plannerOK, execOK, subScored int
	for i := range results {
		r := &results[i]
		if r.Failed() {
			sum.FailedRollouts++
		}
		mainSum += r.Scores.Main
		correctSum += r.Scores.Correct
		if r.Scores.FormatOK {
			plannerOK++
		}
		if r.Scores.ScoreError != "" {
			sum.ScoreErrors++
		}
		d := len(r.Tree.Executors)
		sum.DHistogram[d]++
		sum.Executors += d
		for _, s := range r.Scores.Subs {
			if s.FormatOK {
				execOK++
			}
			if s.ExpertError != "" {
				sum.ExpertErrors++
			}
			subSum += s.Reward
			subScored++
		}
		for _, tr := range append([]TrajectoryResult{r.Planner}, r.Executors...) {
			sum.DriftEvents += tr.Drifts
			if tr.SequenceError != "" {
				sum.SequenceErrors++
			}
		}
		for _, tr := range r.trajectories() {
			countTrajectory(sum, tr)
		}
	}
	if n := float64(len(results)); n > 0 {
		sum.MeanMainReward = mainSum / n
		sum.Accuracy = correctSum / n
		sum.PlannerFormatValid = float64(plannerOK) / n
	}
	if subScored > 0 {
		sum.ExecutorFormatValid = float64(execOK) / float64(subScored)
		sum.MeanSubReward = subSum / float64(subScored)
	}
}

// countTrajectory adds a trajectory's model calls, tokens and tool calls.
func countTrajectory(sum *StepSummary, tr *agents.Trajectory) {
	if tr == nil {
		return
	}
	for _, t := range tr.Turns {
		if t == nil {
			continue
		}
		sum.LLMCalls++
		prompt, completion := t.Usage.PromptTokens, t.Usage.CompletionTokens
		if prompt == 0 && completion == 0 {
			prompt, completion = len(t.PromptIDs), len(t.CompletionIDs)
		}
		sum.PromptTokens += int64(prompt)
		sum.CompletionTokens += int64(completion)
	}
	for _, s := range tr.Steps {
		for _, c := range s.Calls {
			sum.ToolCalls++
			if c.Meta.Class != remote.ClassOK {
				sum.ToolErrors[string(c.Meta.Class)]++
			}
		}
	}
}
