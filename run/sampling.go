package run

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// Logprobs modes of EndpointConfig.LogprobsMode.
const (
	// LogprobsRaw is vLLM's default (--logprobs-mode raw_logprobs): the
	// model's logprobs before temperature, penalties and top-k/top-p.
	LogprobsRaw = "raw"
	// LogprobsProcessed is a vLLM launched with --logprobs-mode
	// processed_logprobs: the logprobs of the distribution sampled from.
	LogprobsProcessed = "processed"
)

// OnPolicySampling returns e with every unset sampling setting at its
// on-policy value: temperature 1, top_p 1, top_k off (-1), min_p 0 and
// neutral penalties. Sampled so, a token's logprob is the model's, which
// is what the trainers' importance ratios assume.
func OnPolicySampling(e EndpointConfig) EndpointConfig {
	f := func(p **float64, v float64) {
		if *p == nil {
			*p = &v
		}
	}
	f(&e.Temperature, 1)
	f(&e.TopP, 1)
	if e.TopK == nil {
		off := -1
		e.TopK = &off
	}
	f(&e.MinP, 0)
	f(&e.RepetitionPenalty, 1)
	f(&e.PresencePenalty, 0)
	f(&e.FrequencyPenalty, 0)
	return e
}

// sampling is e's sampling settings as the model client takes them.
func (e EndpointConfig) sampling() llm.Sampling {
	return llm.Sampling{Temperature: e.Temperature, TopP: e.TopP, TopK: e.TopK, MinP: e.MinP,
		RepetitionPenalty: e.RepetitionPenalty, PresencePenalty: e.PresencePenalty, FrequencyPenalty: e.FrequencyPenalty,
		Stop: e.Stop, MaxTokens: e.MaxTokens, ChatTemplateKwargs: e.ChatTemplateKwargs}
}

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

// offPolicy lists the settings of e that make the sampled distribution
// differ from the model's (empty when e samples on-policy). Unset settings
// count as the server's, which may be anything (a model's
// generation_config.json), so they are listed too.
func (e EndpointConfig) offPolicy() []string {
	var out []string
	is := func(key string, p *float64, neutral float64) {
		switch {
		case p == nil:
			out = append(out, key+" unset (the server's default)")
		case *p != neutral:
			out = append(out, fmt.Sprintf("%s %v", key, *p))
		}
	}
	is("temperature", e.Temperature, 1)
	is("top_p", e.TopP, 1)
	switch {
	case e.TopK == nil:
		out = append(out, "top_k unset (the server's default)")
	case *e.TopK > 0:
		out = append(out, fmt.Sprintf("top_k %d", *e.TopK))
	}
	is("min_p", e.MinP, 0)
	is("repetition_penalty", e.RepetitionPenalty, 1)
	is("presence_penalty", e.PresencePenalty, 0)
	is("frequency_penalty", e.FrequencyPenalty, 0)
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
		switch e.LogprobsMode {
		case "", LogprobsRaw, LogprobsProcessed:
		default:
			p.add(role+".logprobs_mode", "", "%q: want raw or processed", e.LogprobsMode)
			continue
		}
		off := e.offPolicy()
		switch e.Dialect {
		case llm.DialectVLLM:
			if len(off) > 0 && e.LogprobsMode != LogprobsProcessed {
				p.add(role, "", "samples with %s, but a vLLM server reports raw logprobs (before temperature, penalties and top-k/top-p) unless launched with --logprobs-mode processed_logprobs: launch it so and set %s.logprobs_mode: processed, or sample on-policy (temperature 1, top_p 1, top_k -1, min_p 0, neutral penalties)",
					strings.Join(off, ", "), role)
			}
		case llm.DialectSGLang:
			var filters []string
			for _, o := range off {
				if !strings.HasPrefix(o, "temperature") {
					filters = append(filters, o)
				}
			}
			if len(filters) > 0 {
				p.add(role, "", "samples with %s, but SGLang reports logprobs after temperature and before top-k/top-p/min-p and penalties (and raw ones with SGLANG_RETURN_ORIGINAL_LOGPROB set): sample with top_p 1, top_k -1, min_p 0 and neutral penalties",
					strings.Join(filters, ", "))
			}
		}
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
