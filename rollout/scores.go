package rollout

// RolloutScores are the rewards of one rollout and the verdicts behind them.
type RolloutScores struct {
	// FormatOK is the planner's (single agent's) format validity as the
	// reward sees it: the agents' verdict, and false for a failed rollout or
	// a trajectory whose turns form no sequences.
	FormatOK bool `json:"format_ok"`
	// FormatReason says why FormatOK is false (the rollout's error, the
	// trajectory's error or format errors, a sequence assembly failure);
	// empty when it is true.
	FormatReason string `json:"format_reason,omitempty"`
	// Correct is r_correct: the scorer's verdict on the answer, 0 when the
	// format is invalid (no single answer to judge) or the scorer failed.
	Correct float64 `json:"correct"`
	// Verdict is the scorer's full verdict (raw judge output included); nil
	// when the scorer was not asked or failed.
	Verdict *Verdict `json:"verdict,omitempty"`
	// ScoreError records a scorer failure; the rollout then scores as wrong.
	ScoreError string `json:"score_error,omitempty"`
	// Main is R_M.
	Main float64 `json:"main"`
	// Subs holds one entry per executor trajectory, in delegation order.
	Subs []SubScore `json:"subs"`
}

// SubScore is the reward of one executor trajectory.
type SubScore struct {
	// FormatOK is the executor's format validity as the reward sees it;
	// FormatReason says why it is false.
	FormatOK     bool   `json:"format_ok"`
	FormatReason string `json:"format_reason,omitempty"`
	// Expert is r_expert, from the judge or the run's fallback; 0 when the
	// judge failed.
	Expert float64 `json:"expert"`
	// ExpertRaw is the judge's raw output, kept for inspection.
	ExpertRaw string `json:"expert_raw,omitempty"`
	// ExpertError records a judge failure.
	ExpertError string `json:"expert_error,omitempty"`
	// Reward is R_S; 0 in modes without a sub side, where executors are
	// neither judged nor rewarded.
	Reward float64 `json:"reward"`
}
