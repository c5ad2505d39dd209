package llm

// EndpointConfig is one role's inference endpoints as a run's
// configuration holds them (its YAML keys in `yaml` tags, documented in
// `doc` tags; the composition root reads the file and the flags). Its
// flags, where a role has them, are --ROLE-url and --ROLE-model;
// --dialect, --call-timeout, --attempt-timeout, --stream and
// --idle-timeout set the planner's and the executor's at once.
type EndpointConfig struct {
	URLs    []string `yaml:"urls" flag:"url,split" doc:"base {{URL}}s (several: a pool with stickiness and failover)"`
	Model   string   `yaml:"model" flag:"model" doc:"served model {{NAME}}"`
	Dialect string   `yaml:"dialect" roleflag:"dialect" doc:"vllm, sglang or openai (judges, reasoners)"`
	// Parser reads completions the engine returns as text or ids only
	// (the token path, SGLang's native route); "" is the model family's.
	Parser string `yaml:"parser" flag:"parser" zero:"the model family's" doc:"{{NAME}} of the parser that splits completions the engine returns unparsed into reasoning, content and tool calls, as vLLM's of that name: qwen3 (qwen3 reasoning, hermes tool calls), deepseek_r1 (deepseek_r1 reasoning, hermes tool calls), hermes (tool calls only) or none; default from the model name (DeepSeek-R1/QwQ: deepseek_r1, Qwen2.5/Hermes: hermes, else qwen3)"`
	// CallTimeout and AttemptTimeout bound the role's model calls; auto
	// (the zero value) derives them from each call's max_tokens.
	CallTimeout    Timeout `yaml:"call_timeout" category:"timeouts" roleflag:"call-timeout" doc:"deadline of one model call, every attempt and wait included: a duration, or auto (3 × the attempt timeout)"`
	AttemptTimeout Timeout `yaml:"attempt_timeout" category:"timeouts" roleflag:"attempt-timeout" doc:"deadline of one attempt, after which its connection is closed and the call retried on another endpoint: a duration shorter than call_timeout, or auto (60s + 100ms × the call's max_tokens; 4m24.8s at 2048)"`
	// Stream and IdleTimeout receive the role's completions as server-sent
	// events and take a stream silent for IdleTimeout for a stall.
	Stream      bool    `yaml:"stream" roleflag:"stream" doc:"receive chat completions as server-sent events, token ids and logprobs included (vLLM ≥ 0.10.2 chat route; SGLang /generate); a server that streams no token ids is called unstreamed, said at start"`
	IdleTimeout Timeout `yaml:"idle_timeout" category:"timeouts" roleflag:"idle-timeout" doc:"with stream: silence after which a stream is a stall, closed and retried at once however long the generation may take (from the request to its first event too): a duration shorter than attempt_timeout, or auto (60s)"`
	// The sampling settings are sent on every request. The planner's and
	// the executor's default to the on-policy ones (OnPolicySampling); a
	// judge's and a reasoner's unset ones are left to the server.
	Temperature       *float64 `yaml:"temperature" zero:"the server's" doc:"sampling temperature (0 is greedy)"`
	TopP              *float64 `yaml:"top_p" zero:"the server's" doc:"nucleus sampling (1: off)"`
	TopK              *int     `yaml:"top_k" zero:"the server's" doc:"top-k sampling, vLLM/SGLang (-1: off)"`
	MinP              *float64 `yaml:"min_p" zero:"the server's" doc:"min-p sampling, vLLM/SGLang (0: off)"`
	RepetitionPenalty *float64 `yaml:"repetition_penalty" zero:"the server's" doc:"repetition penalty, vLLM/SGLang (1: none)"`
	PresencePenalty   *float64 `yaml:"presence_penalty" zero:"the server's" doc:"presence penalty (0: none)"`
	FrequencyPenalty  *float64 `yaml:"frequency_penalty" zero:"the server's" doc:"frequency penalty (0: none)"`
	Stop              []string `yaml:"stop" doc:"stop strings"`
	MaxTokens         int      `yaml:"max_tokens" doc:"completion cap per call (overrides the budget's; sent as max_completion_tokens to vLLM)"`
	// LogprobsMode says what the role's server reports as a token's
	// logprob; a training run that samples with anything but the neutral
	// settings needs processed ones (LogprobsMismatch says why).
	LogprobsMode string `yaml:"logprobs_mode" zero:"raw" doc:"the logprobs the server reports: raw (vLLM's default: before temperature, penalties and top-k/top-p) or processed (vLLM launched with --logprobs-mode processed_logprobs)"`
	// ChatTemplateKwargs is passed to the server's chat template.
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs" doc:"chat template arguments, e.g. {enable_thinking: false}"`
	// APIKeyEnv names the environment variable holding the endpoint's key;
	// keys themselves never go in files or flags.
	APIKeyEnv string `yaml:"api_key_env" doc:"environment variable holding the API key"`
}

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

// Sampling is e's sampling settings as the model client takes them.
func (e EndpointConfig) Sampling() Sampling {
	return Sampling{Temperature: e.Temperature, TopP: e.TopP, TopK: e.TopK, MinP: e.MinP,
		RepetitionPenalty: e.RepetitionPenalty, PresencePenalty: e.PresencePenalty, FrequencyPenalty: e.FrequencyPenalty,
		Stop: e.Stop, MaxTokens: e.MaxTokens, ChatTemplateKwargs: e.ChatTemplateKwargs}
}
