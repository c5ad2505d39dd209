package rollout

// SamplingRecord is a model call's sampling settings as sent: the step
// summary names each role's (StepSummary.Sampling), and a turn sent with
// other settings than its role's carries its own (TurnRecord.Sampling). A
// nil pointer is a setting left to the server's default; the per-turn seed
// is not recorded (each turn's is derived from the rollout's seed).
type SamplingRecord struct {
	Temperature       *float64 `json:"temperature,omitempty"`
	TopP              *float64 `json:"top_p,omitempty"`
	TopK              *int     `json:"top_k,omitempty"`
	MinP              *float64 `json:"min_p,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	PresencePenalty   *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty,omitempty"`
	// MaxTokens is the completion cap (0: the server's).
	MaxTokens int      `json:"max_tokens,omitempty"`
	Stop      []string `json:"stop,omitempty"`
	// ChatTemplateKwargs are the chat template's arguments sent (e.g.
	// {"enable_thinking": false}).
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
	// LogprobsMode is what the role's server reports as logprobs ("raw"
	// or "processed"), as the configuration states it; summaries only.
	LogprobsMode string `json:"logprobs_mode,omitempty"`
}
