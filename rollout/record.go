package rollout

import "github.com/mgrpo/mgrpo/internal/failure"

// RolloutRecord is one line of rollouts.jsonl: a rollout tree with its
// question, gold answer, scores and errors, for inspection (the trajectory
// viewer reads it). Readers should ignore keys they do not know, so that
// files of older and newer farms stay readable.
type RolloutRecord struct {
	ID   string      `json:"id"`
	Task RolloutTask `json:"task"`
	// Question and GoldAnswer are the task's, so a line can be read without
	// the task file.
	Question   string `json:"question"`
	GoldAnswer string `json:"gold_answer"`
	Error      string `json:"error,omitempty"`
	// FailureKind and FailureCause classify the rollout (see
	// internal/failure): set when it failed or met an infra failure.
	FailureKind  failure.Kind  `json:"failure_kind,omitempty"`
	FailureCause string        `json:"failure_cause,omitempty"`
	Scores       RolloutScores `json:"scores"`
	// Drifts and SequenceErrors summarise the sequence assembly of the
	// planner (first) and each executor.
	Drifts []int `json:"drifts"`
	// HistoryEdits and ContextCuts count, in the same order, the other
	// reasons a trajectory was split (see Sample.SplitReason); absent
	// when the rollout has none.
	HistoryEdits   []int       `json:"history_edits,omitempty"`
	ContextCuts    []int       `json:"context_cuts,omitempty"`
	SequenceErrors []string    `json:"sequence_errors,omitempty"`
	Tree           *TreeRecord `json:"tree"`
}
