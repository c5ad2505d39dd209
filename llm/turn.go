package llm

import (
	"reflect"
	"slices"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Sampling holds the sampling parameters of a role. Pointer fields are
// optional: nil leaves the server's default, and a pointer to zero is sent
// as zero (temperature 0 means greedy decoding and is honoured).
type Sampling struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	// TopK is -1 (or 0) for off on vLLM and SGLang; the openai dialect
	// never sends it.
	TopK *int `json:"top_k,omitempty"`
	// MinP, RepetitionPenalty, PresencePenalty and FrequencyPenalty are
	// vLLM's and SGLang's; the openai dialect sends only the last two.
	MinP              *float64 `json:"min_p,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	PresencePenalty   *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty,omitempty"`
	// MaxTokens caps the completion; 0 leaves the server's default.
	MaxTokens int      `json:"max_tokens,omitempty"`
	Stop      []string `json:"stop,omitempty"`
	// Seed makes sampling reproducible; a retried request reuses it, so a
	// retry is idempotent.
	Seed *int64 `json:"seed,omitempty"`
	// ChatTemplateKwargs is passed to the chat template, e.g.
	// {"enable_thinking": false}.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
}

// merge returns s with every field set in o replacing s's.
func (s Sampling) merge(o *Sampling) Sampling {
	if o == nil {
		return s
	}
	if o.Temperature != nil {
		s.Temperature = o.Temperature
	}
	if o.TopP != nil {
		s.TopP = o.TopP
	}
	if o.TopK != nil {
		s.TopK = o.TopK
	}
	if o.MinP != nil {
		s.MinP = o.MinP
	}
	if o.RepetitionPenalty != nil {
		s.RepetitionPenalty = o.RepetitionPenalty
	}
	if o.PresencePenalty != nil {
		s.PresencePenalty = o.PresencePenalty
	}
	if o.FrequencyPenalty != nil {
		s.FrequencyPenalty = o.FrequencyPenalty
	}
	if o.MaxTokens != 0 {
		s.MaxTokens = o.MaxTokens
	}
	if o.Stop != nil {
		s.Stop = o.Stop
	}
	if o.Seed != nil {
		s.Seed = o.Seed
	}
	if o.ChatTemplateKwargs != nil {
		s.ChatTemplateKwargs = o.ChatTemplateKwargs
	}
	return s
}

// overridden returns the settings a call merged from the role's settings
// s and the request's override o was sent with, without its seed, when
// they differ from the role's: nil when the call sampled as the role does.
// The seed is per call by design and the completion cap is the role's when
// the role has one, else the caller's (the agents' budget, which the step
// summary names as the role's), so neither counts as a difference.
func (s Sampling) overridden(o *Sampling) *Sampling {
	if o == nil {
		return nil
	}
	m := s.merge(o)
	m.Seed = nil
	ref := s
	ref.Seed = nil
	if ref.MaxTokens == 0 {
		ref.MaxTokens = m.MaxTokens
	}
	if m.equal(ref) {
		return nil
	}
	return &m
}

// equal reports whether s and o hold the same settings.
func (s Sampling) equal(o Sampling) bool {
	f := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	i := func(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	i64 := func(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return f(s.Temperature, o.Temperature) && f(s.TopP, o.TopP) && i(s.TopK, o.TopK) && f(s.MinP, o.MinP) &&
		f(s.RepetitionPenalty, o.RepetitionPenalty) && f(s.PresencePenalty, o.PresencePenalty) &&
		f(s.FrequencyPenalty, o.FrequencyPenalty) && s.MaxTokens == o.MaxTokens && slices.Equal(s.Stop, o.Stop) &&
		i64(s.Seed, o.Seed) && reflect.DeepEqual(s.ChatTemplateKwargs, o.ChatTemplateKwargs)
}

// Request is one chat call.
type Request struct {
	// Messages is the conversation so far. To keep token-exact prefixes,
	// append each Turn.Message unchanged.
	Messages []openai.ChatCompletionMessage
	// Tools offered to the model.
	Tools []openai.Tool
	// TrajectoryKey routes every call of one trajectory to the same endpoint
	// while it is healthy, so the server's prefix cache is reused. Empty
	// means no stickiness.
	TrajectoryKey string
	// Sampling overrides the role's sampling parameters field by field.
	Sampling *Sampling
	// Prefix, when set, carries the trajectory's previous prompt ids from
	// call to call so that the shared part is not decoded again (see
	// PromptPrefix). The results are the same with or without it.
	Prefix *PromptPrefix
	// Tokens, when set, continues the trajectory in tokens (see
	// TokenState): Messages[:Tokens.Covered()] are the conversation the
	// state already holds, and only the messages after them are rendered.
	// Without it, each call sends the whole conversation to be rendered
	// again. A client without token capture, or of the openai dialect,
	// ignores it.
	Tokens *TokenState
}

// Turn is the record of one call: the assistant message and the exact
// tokens the engine saw and sampled. A Turn with Abort set is a partial
// generation (see Client.Chat), never a finished one. It round-trips
// through JSON, so turns can travel between processes.
type Turn struct {
	// Message is the assistant message as the server returned it (content,
	// reasoning_content, tool_calls). Replay it verbatim in the next request.
	Message openai.ChatCompletionMessage `json:"message"`
	// ToolCalls are the calls of the message: the server-parsed tool_calls,
	// or those parsed client-side from Hermes blocks in the content.
	ToolCalls []openai.ToolCall `json:"tool_calls,omitempty"`
	// ToolCallError is set when a Hermes block in the content was
	// malformed; the agent loop reports it to the model.
	ToolCallError *FormatError `json:"tool_call_error,omitempty"`

	// PromptIDs are the token ids of the rendered prompt.
	PromptIDs []int32 `json:"prompt_ids,omitempty"`
	// CompletionIDs are the sampled token ids, ending with the EOS id when
	// the model stopped on it.
	CompletionIDs []int32 `json:"completion_ids,omitempty"`
	// Logprobs holds the sampler's logprob of each completion id.
	Logprobs []float64 `json:"logprobs,omitempty"`

	// FinishReason is "stop", "length" or "tool_calls"; "abort" on a
	// partial turn.
	FinishReason string `json:"finish_reason"`
	// Abort is set when the generation ended before the model finished it:
	// PromptIDs, CompletionIDs and Logprobs are then what the engine had
	// produced by that point (what a continuation would start from), the
	// message is its text so far, and ToolCalls stays empty (the text may
	// end inside a call).
	Abort *Abort `json:"abort,omitempty"`
	// StopReason is the matched stop string or token id, "" at EOS.
	StopReason string       `json:"stop_reason,omitempty"`
	Usage      openai.Usage `json:"usage"`
	// WeightVersion is the weight version that served the call, when the
	// server reports one.
	WeightVersion string `json:"weight_version,omitempty"`
	// Sampling is set only when the call was sent with other sampling
	// settings than the client's role (see Sampling.differs): the settings
	// it was sent with, the seed left out. A turn sent as its role samples
	// carries none.
	Sampling *Sampling `json:"sampling,omitempty"`

	// Endpoint is the base URL that served the call, credentials redacted.
	Endpoint string        `json:"endpoint,omitempty"`
	Latency  time.Duration `json:"latency,omitempty"`
	// Attempts counts HTTP attempts, 1 when the first succeeded.
	Attempts int `json:"attempts,omitempty"`
	// ReusedPromptTokens counts the leading prompt ids the call took from
	// the trajectory's previous prompt and completion as they were (the
	// token path: all of them); for a call that rendered its whole prompt
	// again, the leading ids that came out equal to the previous sequence
	// (all of it only where the template is append-only).
	ReusedPromptTokens int `json:"reused_prompt_tokens,omitempty"`
	// prevLen is, on a call of a trajectory with Tokens after its first,
	// the length of the previous prompt and completion: the reused
	// fraction is ReusedPromptTokens / prevLen (0: not a follow-up).
	prevLen int

	// tokens is PromptIDs then CompletionIDs as one view, when the client
	// placed them so in the trajectory's array (see PromptPrefix);
	// Sequences then uses it instead of copying. It is trusted only while
	// PromptIDs and CompletionIDs still point into it (see contiguous).
	tokens []int32
}

// Abort says how a generation was ended before the model finished it.
type Abort struct {
	// By is who ended it: AbortedByServer for finish_reason "abort" (a
	// pause for a weight update, an engine abort, a shutdown),
	// AbortedByClient for a stream the client cut.
	By string `json:"by"`
	// Reason is the server's message, when it sent one.
	Reason string `json:"reason,omitempty"`
}

// Abort.By values.
const (
	// AbortedByServer is a generation the server ended with finish_reason
	// "abort".
	AbortedByServer = "server"
	// AbortedByClient is a streamed generation the client cut: the stream
	// went idle (ErrIdleTimeout), ran out of its attempt timeout, or
	// closed before its final event. Its tokens are those the chunks
	// received by then carried.
	AbortedByClient = "client"
)

// Partial reports whether t is a generation that ended before the model
// finished it (Abort set); false for nil.
func (t *Turn) Partial() bool { return t != nil && t.Abort != nil }

// partialTurn marks t, decoded from an answer with finish_reason "abort",
// as partial: FinishReason "abort", Abort from the server's message, and no
// tool calls parsed from a message that may end inside one. It returns nil
// when t holds no usable tokens (ids with one logprob each): nothing would
// be kept.
func partialTurn(t *Turn, message string) *Turn {
	if t == nil || checkTokens(t) != nil {
		return nil
	}
	t.FinishReason = "abort"
	t.Abort = &Abort{By: AbortedByServer, Reason: message}
	t.ToolCalls, t.ToolCallError = nil, nil
	return t
}

// cutTurn is partialTurn for a stream the client cut, for reason.
func cutTurn(t *Turn, reason string) *Turn {
	if t = partialTurn(t, reason); t != nil {
		t.Abort.By = AbortedByClient
	}
	return t
}

// contiguous returns t's prompt and completion ids as one slice when they
// lie one after the other in one array, else nil.
func (t *Turn) contiguous() []int32 {
	n, m := len(t.PromptIDs), len(t.CompletionIDs)
	if n == 0 || m == 0 || len(t.tokens) != n+m || &t.tokens[0] != &t.PromptIDs[0] || &t.tokens[n] != &t.CompletionIDs[0] {
		return nil
	}
	return t.tokens[: n+m : n+m]
}

// point makes t's ids views of ids, which holds the same values: its
// prompt, then its completion (see PromptPrefix.adopt).
func (t *Turn) point(ids []int32) {
	n, m := len(t.PromptIDs), len(t.CompletionIDs)
	t.PromptIDs, t.CompletionIDs, t.tokens = ids[:n:n], ids[n:n+m:n+m], ids[:n+m:n+m]
}

// WithoutPromptIDs returns a copy of t without its prompt ids and with
// completion ids of its own. A trajectory's turns share one id array that
// is replaced by a larger one as the conversation grows (see
// PromptPrefix); a turn kept after its sequence is assembled would
// otherwise keep its array, outgrown by the later turns, alive.
func (t *Turn) WithoutPromptIDs() *Turn {
	c := *t
	c.PromptIDs, c.tokens = nil, nil
	c.CompletionIDs = slices.Clone(t.CompletionIDs)
	return &c
}

// HasTokens reports whether the turn carries token data.
func (t *Turn) HasTokens() bool {
	return len(t.PromptIDs) > 0 && len(t.CompletionIDs) > 0
}
