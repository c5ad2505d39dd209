package run

import (
	"errors"
	"fmt"

	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// Logprobs modes of EndpointConfig.LogprobsMode (llm's).
const (
	LogprobsRaw       = llm.LogprobsRaw
	LogprobsProcessed = llm.LogprobsProcessed
)

// OnPolicySampling returns e with every unset sampling setting at its
// on-policy value (llm.OnPolicySampling).
func OnPolicySampling(e EndpointConfig) EndpointConfig { return llm.OnPolicySampling(e) }

// maxTokens is the completion cap e's calls are sent with: its own
// max_tokens, else the budget's.
func (c Config) maxTokens(e EndpointConfig) int {
	if e.MaxTokens > 0 {
		return e.MaxTokens
	}
	return c.Budgets.MaxTokens
}

// samplingRecords names the sampling settings of the roles mode runs (the
// single agent is the executor endpoint's), for every step summary.
func (c Config) samplingRecords(mode rollout.Mode) map[string]rollout.SamplingRecord {
	rec := func(e EndpointConfig) rollout.SamplingRecord {
		mode := e.LogprobsMode
		if mode == "" {
			mode = LogprobsRaw
		}
		return rollout.SamplingRecord{Temperature: e.Temperature, TopP: e.TopP, TopK: e.TopK, MinP: e.MinP,
			RepetitionPenalty: e.RepetitionPenalty, PresencePenalty: e.PresencePenalty, FrequencyPenalty: e.FrequencyPenalty,
			MaxTokens: c.maxTokens(e), Stop: e.Stop, ChatTemplateKwargs: e.ChatTemplateKwargs, LogprobsMode: mode}
	}
	out := map[string]rollout.SamplingRecord{"executor": rec(c.Executor)}
	if mode != rollout.ModeSingle {
		out["planner"] = rec(c.Planner)
	}
	return out
}

// CheckSampling reports the trained roles whose logprobs would not describe
// the distribution their tokens are drawn from: sampling that is not
// neutral against a vLLM reporting raw logprobs (its default, and no route
// of vLLM's tells which mode a server runs), or top-k/top-p/min-p and
// penalties against SGLang, whose logprobs are taken after temperature but
// before those. Such a run would train off-policy without anyone seeing
// it. An error wraps ErrConfig.
func (c Config) CheckSampling(roles []string) error {
	var p problems
	for _, role := range roles {
		e := c.Planner
		if role == "executor" {
			e = c.Executor
		}
		p = append(p, e.CheckLogprobs(role)...)
	}
	if len(p) > 0 {
		return fmt.Errorf("%w: sampling: %w", ErrConfig, errors.Join(p...))
	}
	return nil
}

// trainedRoles names the endpoint roles (planner, executor) whose samples
// train a model in mode, for the side role of a decoupled run ("" both).
func trainedRoles(mode rollout.Mode, role string) []string {
	var out []string
	if mode != rollout.ModeSingle && role != string(rollout.RoleExecutor) {
		out = append(out, "planner")
	}
	if (mode == rollout.ModeMGRPO && role != string(rollout.RolePlanner)) || mode == rollout.ModeSingle {
		out = append(out, "executor")
	}
	return out
}
