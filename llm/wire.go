package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	openai "github.com/sashabaranov/go-openai"
)

// ChatRequest is a /v1/chat/completions body: go-openai's request plus the
// fields RL training needs. Fields declared here shadow the embedded ones
// with the same JSON name (encoding/json prefers the shallower field), which
// is how temperature 0 and top_logprobs 0 are sent: go-openai tags them
// omitempty and would drop them.
type ChatRequest struct {
	openai.ChatCompletionRequest

	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	TopLogProbs *int     `json:"top_logprobs,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	TopK        *int     `json:"top_k,omitempty"`
	// MinP and RepetitionPenalty are vLLM's and SGLang's extensions;
	// PresencePenalty and FrequencyPenalty shadow go-openai's float32
	// fields, which omitempty would drop at zero.
	MinP              *float64 `json:"min_p,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	PresencePenalty   *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty,omitempty"`

	// ReturnTokenIDs is vLLM ≥ 0.10.2's switch for prompt_token_ids and
	// choices[].token_ids.
	ReturnTokenIDs bool `json:"return_token_ids,omitempty"`
	// ReturnTokensAsTokenIDs makes older vLLM write each logprob token as
	// "token_id:N".
	ReturnTokensAsTokenIDs bool `json:"return_tokens_as_token_ids,omitempty"`
	// ReturnPromptTokenIDs and ReturnMetaInfo are SGLang's switches for
	// choices[].prompt_token_ids and choices[].meta_info.
	ReturnPromptTokenIDs bool `json:"return_prompt_token_ids,omitempty"`
	ReturnMetaInfo       bool `json:"return_meta_info,omitempty"`
}

// ChatResponse is a chat completion with the RL extension fields of vLLM and
// SGLang. Choices shadows the embedded go-openai field so each choice keeps
// its token ids.
type ChatResponse struct {
	openai.ChatCompletionResponse

	Choices []ChatChoice `json:"choices"`
	// PromptTokenIDs is vLLM's top-level prompt_token_ids.
	PromptTokenIDs []int32 `json:"prompt_token_ids"`
	// Metadata carries SGLang's weight_version on newer servers.
	Metadata *ResponseMetadata `json:"metadata"`
}

// ResponseMetadata is a response-level metadata object.
type ResponseMetadata struct {
	WeightVersion string `json:"weight_version"`
}

// ChatChoice is one choice with its token data.
type ChatChoice struct {
	openai.ChatCompletionChoice

	// Message shadows the embedded message to keep vLLM's newer
	// "reasoning" field.
	Message ChatMessage `json:"message"`

	// TokenIDs is vLLM's completion ids.
	TokenIDs []int32 `json:"token_ids"`
	// PromptTokenIDs is SGLang's per-choice prompt ids.
	PromptTokenIDs []int32 `json:"prompt_token_ids"`
	// StopReason is vLLM's stop_reason: the matched stop string or token id,
	// or null at EOS.
	StopReason json.RawMessage `json:"stop_reason"`
	// MatchedStop is SGLang's equivalent of StopReason.
	MatchedStop json.RawMessage `json:"matched_stop"`
	// MetaInfo is SGLang's meta_info (return_meta_info).
	MetaInfo *MetaInfo `json:"meta_info"`
}

// ChatMessage is a response message: go-openai's message plus vLLM's
// "reasoning" (the newer name of reasoning_content).
type ChatMessage struct {
	openai.ChatCompletionMessage
	Reasoning string `json:"reasoning,omitempty"`
}

// UnmarshalJSON decodes the go-openai message, then the extra field (the
// embedded type's own UnmarshalJSON would otherwise hide it).
func (m *ChatMessage) UnmarshalJSON(b []byte) error {
	if err := m.ChatCompletionMessage.UnmarshalJSON(b); err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(`"reasoning"`)) {
		return nil
	}
	var x struct {
		Reasoning *string `json:"reasoning"`
	}
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	if x.Reasoning != nil {
		m.Reasoning = *x.Reasoning
	}
	return nil
}

// message returns the go-openai message with reasoning in
// reasoning_content, the field every server accepts back.
func (m *ChatMessage) message() openai.ChatCompletionMessage {
	out := m.ChatCompletionMessage
	if out.ReasoningContent == "" && m.Reasoning != "" {
		out.ReasoningContent = m.Reasoning
	}
	return out
}

// MetaInfo is SGLang's per-request meta information, shared by the chat
// route's meta_info and the native /generate response.
type MetaInfo struct {
	ID                  string          `json:"id"`
	FinishReason        json.RawMessage `json:"finish_reason"`
	PromptTokens        int             `json:"prompt_tokens"`
	CompletionTokens    int             `json:"completion_tokens"`
	CachedTokens        int             `json:"cached_tokens"`
	OutputTokenLogprobs []TokenLogprob  `json:"output_token_logprobs"`
	WeightVersion       string          `json:"weight_version"`
}

// TokenLogprob is one entry of SGLang's output_token_logprobs, written on
// the wire as [logprob, token_id, text-or-null].
type TokenLogprob struct {
	Logprob float64
	ID      int32
}

// UnmarshalJSON reads the [logprob, id, text] triple. A null logprob or a
// missing id is an error: the sample would be silently wrong otherwise.
func (t *TokenLogprob) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return fmt.Errorf("output_token_logprobs entry: %w", err)
	}
	if len(parts) < 2 {
		return fmt.Errorf("output_token_logprobs entry has %d elements, want at least 2", len(parts))
	}
	lp, err := strconv.ParseFloat(string(bytes.TrimSpace(parts[0])), 64)
	if err != nil {
		return fmt.Errorf("output_token_logprobs logprob %s: %w", parts[0], err)
	}
	id, err := strconv.ParseInt(string(bytes.TrimSpace(parts[1])), 10, 32)
	if err != nil {
		return fmt.Errorf("output_token_logprobs token id %s: %w", parts[1], err)
	}
	t.Logprob, t.ID = lp, int32(id)
	return nil
}

// sglangFinish is SGLang's finish_reason object in meta_info:
// {"type": "stop"|"length"|"abort", "matched": id-or-string, "length": n,
// "message": …}.
type sglangFinish struct {
	Type    string          `json:"type"`
	Matched json.RawMessage `json:"matched"`
	Message string          `json:"message"`
}

// GenerateRequest is SGLang's native /generate body.
type GenerateRequest struct {
	InputIDs       []int32        `json:"input_ids"`
	SamplingParams map[string]any `json:"sampling_params"`
	ReturnLogprob  bool           `json:"return_logprob"`
	TopLogprobsNum int            `json:"top_logprobs_num"`
	Stream         bool           `json:"stream"`
}

// GenerateResponse is SGLang's native /generate answer.
type GenerateResponse struct {
	Text      string   `json:"text"`
	OutputIDs []int32  `json:"output_ids"`
	MetaInfo  MetaInfo `json:"meta_info"`
}

// TokenizeRequest is a /tokenize (vLLM) or /v1/tokenize (SGLang) body in
// messages form: the server applies its chat template and returns the ids
// of the prompt it would generate from.
type TokenizeRequest struct {
	Model               string                         `json:"model,omitempty"`
	Messages            []openai.ChatCompletionMessage `json:"messages"`
	Tools               []openai.Tool                  `json:"tools,omitempty"`
	AddGenerationPrompt bool                           `json:"add_generation_prompt"`
	AddSpecialTokens    bool                           `json:"add_special_tokens"`
	ChatTemplateKwargs  map[string]any                 `json:"chat_template_kwargs,omitempty"`
}

// TokenizeResponse is the tokenize answer; vLLM calls the ids "tokens",
// SGLang "tokens" too (older builds "input_ids").
type TokenizeResponse struct {
	Tokens   IDList `json:"tokens"`
	InputIDs IDList `json:"input_ids"`
	Count    int    `json:"count"`
	// MaxModelLen is the model's context in tokens, where the server says.
	MaxModelLen int `json:"max_model_len"`
}

// ids returns whichever id list the server filled.
func (r *TokenizeResponse) ids() []int32 {
	if len(r.Tokens) > 0 {
		return r.Tokens
	}
	return r.InputIDs
}

// errorBody covers the error shapes of vLLM ({"error": {...}}), SGLang's
// OpenAI routes (flat) and SGLang's native routes.
type errorBody struct {
	Message string `json:"message"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// errorMessage extracts a server error message from body, or "".
func errorMessage(body []byte) string {
	var e errorBody
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	if e.Error != nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return e.Message
}

// rawStopReason renders a stop_reason / matched_stop value as text: a string
// as itself, a token id as its decimal form, null as "".
func rawStopReason(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
