package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// stopList is a stop field: a string, a list of strings, or null.
type stopList []string

func (s *stopList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*s = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("stop: want a string or a list of strings")
	}
	*s = many
	return nil
}

// wireFunction is the function of a tool or a tool call.
type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// wireTool is one entry of the request's tools.
type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

// wireToolCall is one tool call of an assistant message sent back.
type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Index    *int         `json:"index,omitempty"`
	Function wireFunction `json:"function"`
}

// wireMessage is one chat message as clients send it.
type wireMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name,omitempty"`
	ToolCalls        []wireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Refusal          *string         `json:"refusal,omitempty"`

	// text is the content, already decoded from a JSON string by
	// decodeChatFast, which then leaves Content nil; nil otherwise.
	text *string
}

// streamOptions is stream_options.
type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats bool  `json:"continuous_usage_stats"`
}

// samplingFields are the sampling parameters shared by chat and completions.
type samplingFields struct {
	Model             string          `json:"model"`
	MaxTokens         *int            `json:"max_tokens"`
	N                 *int            `json:"n"`
	Temperature       *float64        `json:"temperature"`
	TopP              *float64        `json:"top_p"`
	TopK              *int            `json:"top_k"`
	MinP              *float64        `json:"min_p"`
	Seed              *int64          `json:"seed"`
	Stop              stopList        `json:"stop"`
	StopTokenIDs      []int           `json:"stop_token_ids"`
	Stream            bool            `json:"stream"`
	StreamOptions     *streamOptions  `json:"stream_options"`
	PresencePenalty   *float64        `json:"presence_penalty"`
	FrequencyPenalty  *float64        `json:"frequency_penalty"`
	RepetitionPenalty *float64        `json:"repetition_penalty"`
	LogitBias         json.RawMessage `json:"logit_bias"`
	User              string          `json:"user"`
	IgnoreEOS         bool            `json:"ignore_eos"`
	MinTokens         int             `json:"min_tokens"`
	SkipSpecialTokens *bool           `json:"skip_special_tokens"`
	RequestID         string          `json:"request_id"`
	Priority          *int            `json:"priority"`
	ReturnTokenIDs    bool            `json:"return_token_ids"`
	ReturnTokensAsIDs bool            `json:"return_tokens_as_token_ids"`
	// SGLang extensions.
	ReturnPromptTokenIDs bool   `json:"return_prompt_token_ids"`
	ReturnMetaInfo       bool   `json:"return_meta_info"`
	Rid                  string `json:"rid"`
}

// chatRequest is a /v1/chat/completions body.
type chatRequest struct {
	samplingFields
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Logprobs            bool            `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
	ChatTemplateKwargs  map[string]any  `json:"chat_template_kwargs"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
	ContinueFinal       bool            `json:"continue_final_message"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	ReasoningEffort     *string         `json:"reasoning_effort"`
	IncludeReasoning    *bool           `json:"include_reasoning"`
	SeparateReasoning   *bool           `json:"separate_reasoning"`
	StreamReasoning     *bool           `json:"stream_reasoning"`
}

// completionRequest is a /v1/completions body.
type completionRequest struct {
	samplingFields
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
	Suffix   *string         `json:"suffix"`
}

// promptInput is one prompt of a completions or /generate request.
type promptInput struct {
	text  string
	ids   []int
	isIDs bool
}

// parsePrompts reads a prompt field: a string, a list of strings, a list of
// token ids, or a list of such lists.
func parsePrompts(raw json.RawMessage, field string) ([]promptInput, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("Either %s or prompt_embeds must be provided and non-empty.", field)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return nil, badRequest("Either %s or prompt_embeds must be provided and non-empty.", field)
		}
		return []promptInput{{text: text}}, nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		if len(ids) == 0 {
			return nil, badRequest("%s: the list of token ids is empty", field)
		}
		return []promptInput{{ids: ids, isIDs: true}}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil && len(texts) > 0 {
		out := make([]promptInput, len(texts))
		for i, t := range texts {
			out[i] = promptInput{text: t}
		}
		return out, nil
	}
	var idLists [][]int
	if json.Unmarshal(raw, &idLists) == nil && len(idLists) > 0 {
		out := make([]promptInput, len(idLists))
		for i, l := range idLists {
			if len(l) == 0 {
				return nil, badRequest("%s[%d]: the list of token ids is empty", field, i)
			}
			out[i] = promptInput{ids: l, isIDs: true}
		}
		return out, nil
	}
	return nil, badRequest("1 validation error: body.%s: input should be a string, a list of strings, a list of token ids or a list of lists of token ids", field)
}

// messageText reads a message's content: a string, null, or a list of
// {"type": "text", "text": …} parts (joined with newlines, as vLLM does for
// text-only content).
func messageText(raw json.RawMessage, i int) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("1 validation error: body.messages[%d].content: input should be a string or a list of content parts", i)
	}
	var b bytes.Buffer
	for j, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", badRequest("messages[%d].content[%d]: unsupported content part type %q (this model only reads text)", i, j, p.Type)
		}
		if j > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// toMessages converts wire messages for the template and the policy.
func toMessages(in []wireMessage) ([]Message, error) {
	out := make([]Message, 0, len(in))
	for i, m := range in {
		var text string
		if m.text != nil {
			text = *m.text
		} else {
			var err error
			if text, err = messageText(m.Content, i); err != nil {
				return nil, err
			}
		}
		msg := Message{Role: m.Role, Content: text, ToolCallID: m.ToolCallID, Name: m.Name}
		switch {
		case m.ReasoningContent != nil:
			msg.Reasoning = *m.ReasoningContent
		case m.Reasoning != nil:
			msg.Reasoning = *m.Reasoning
		}
		for j, tc := range m.ToolCalls {
			args, err := callArguments(tc.Function.Arguments)
			if err != nil {
				return nil, badRequest("messages[%d].tool_calls[%d].function.arguments: %v", i, j, err)
			}
			msg.ToolCalls = append(msg.ToolCalls, policy.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
		}
		out = append(out, msg)
	}
	return out, nil
}

// callArguments reads tool-call arguments: normally a JSON string holding
// the arguments' JSON text; an object is accepted and kept verbatim.
func callArguments(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	if raw[0] == '{' {
		return string(raw), nil
	}
	return "", fmt.Errorf("want a JSON string")
}

// toTools converts the request's tools.
func toTools(in []wireTool) ([]policy.Tool, error) {
	out := make([]policy.Tool, 0, len(in))
	for i, t := range in {
		if t.Type != "" && t.Type != "function" {
			return nil, badRequest("tools[%d].type: input should be 'function'", i)
		}
		if t.Function.Name == "" {
			return nil, badRequest("1 validation error: body.tools[%d].function.name: field required", i)
		}
		out = append(out, policy.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return out, nil
}

// checkSampling validates the parameters vLLM's and SGLang's SamplingParams
// check, with their messages.
func checkSampling(f *samplingFields, n int) error {
	if n < 1 {
		return badRequest("n must be at least 1, got %d.", n)
	}
	if f.Temperature != nil && (math.IsNaN(*f.Temperature) || *f.Temperature < 0) {
		return badRequest("temperature must be non-negative, got %v.", *f.Temperature)
	}
	if f.TopP != nil && (*f.TopP <= 0 || *f.TopP > 1) {
		return badRequest("top_p must be in (0, 1], got %v.", *f.TopP)
	}
	if f.TopK != nil && *f.TopK < -1 {
		return badRequest("top_k must be 0 (disable), or at least 1, got %d.", *f.TopK)
	}
	if f.MinP != nil && (*f.MinP < 0 || *f.MinP > 1) {
		return badRequest("min_p must be in [0, 1], got %v.", *f.MinP)
	}
	if f.StreamOptions != nil && !f.Stream {
		return badRequest("Stream options can only be defined when `stream=True`.")
	}
	return nil
}

// filtersOf returns a request's top_p, top_k and min_p as the policy's
// filters (unset: none).
func filtersOf(topP *float64, topK *int, minP *float64) policy.Filters {
	var f policy.Filters
	if topP != nil {
		f.TopP = *topP
	}
	if topK != nil {
		f.TopK = *topK
	}
	if minP != nil {
		f.MinP = *minP
	}
	return f
}

// temperatureOr returns the request temperature or the default 1.0.
func temperatureOr(t *float64) float64 {
	if t == nil {
		return 1
	}
	return *t
}
