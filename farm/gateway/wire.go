package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// chatRequest is the part of an OpenAI chat completions request the gateway
// reads. Sampling fields are pointers so that an absent field is told from a
// zero; fields it does not know are ignored, as OpenAI's servers ignore
// what a model does not use.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []wireMessage `json:"messages"`
	Tools         []openai.Tool `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	N                   *int            `json:"n"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`

	// toolsRaw is the tools member as the agent wrote it, and toolsKnown
	// whether Tools is a remembered list (see fastChatRequest).
	toolsRaw   []byte
	toolsKnown bool
}

// completionRequest is the part of an OpenAI (legacy) completions request
// the gateway reads.
type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature *float64        `json:"temperature"`
	TopP        *float64        `json:"top_p"`
	MaxTokens   *int            `json:"max_tokens"`
	N           *int            `json:"n"`
	BestOf      *int            `json:"best_of"`
	Stop        json.RawMessage `json:"stop"`
	Logprobs    *int            `json:"logprobs"`
	Echo        bool            `json:"echo"`
	Suffix      *string         `json:"suffix"`
	// ReturnTokenIDs is vLLM's extension: the answer's choices carry
	// prompt_token_ids and token_ids.
	ReturnTokenIDs bool `json:"return_token_ids"`
}

// wireMessage is one message of a request as agents send it: content is a
// string, null, or a list of text parts.
type wireMessage struct {
	Role             string            `json:"role"`
	Content          json.RawMessage   `json:"content"`
	Name             string            `json:"name,omitempty"`
	ToolCalls        []openai.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string            `json:"tool_call_id,omitempty"`
	ReasoningContent string            `json:"reasoning_content,omitempty"`
}

// message converts m to the client's message type; content parts other
// than text are refused (the engines behind a role take text).
func (m wireMessage) message() (openai.ChatCompletionMessage, error) {
	out := openai.ChatCompletionMessage{Role: m.Role, Name: m.Name, ToolCalls: m.ToolCalls,
		ToolCallID: m.ToolCallID, ReasoningContent: m.ReasoningContent}
	switch m.Role {
	case openai.ChatMessageRoleSystem, openai.ChatMessageRoleUser, openai.ChatMessageRoleAssistant,
		openai.ChatMessageRoleTool, openai.ChatMessageRoleDeveloper:
	default:
		return out, fmt.Errorf("role %q: want system, developer, user, assistant or tool", m.Role)
	}
	if m.Role == openai.ChatMessageRoleDeveloper {
		// The engines' chat templates know system prompts; a developer
		// message is OpenAI's newer name for one.
		out.Role = openai.ChatMessageRoleSystem
	}
	text, err := contentText(m.Content)
	if err != nil {
		return out, err
	}
	out.Content = text
	return out, nil
}

// contentText reads a message's content: a string, null or absent, or a
// list of {"type": "text", "text": …} parts, joined.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		// encoding/json has checked the literal already: a valid UTF-8
		// string without escapes is its bytes between the quotes (the
		// fast path of every message of a long history).
		if body := raw[1 : len(raw)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
			return string(body), nil
		}
		// Text with escapes (a history's newlines) through the client's
		// scanner, which resolves them as encoding/json does.
		sc := jsonfast.Scanner{B: raw}
		if v, ok := sc.Text(); ok && sc.End() {
			return v, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("content: %w", err)
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content: want a string or a list of text parts")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part %d: type %q: only text parts are supported", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// stopList reads stop as a string or a list of strings.
func stopList(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New("stop: want a string or a list of strings")
	}
	return list, nil
}

// errorBody is OpenAI's error shape.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// errorTypes maps a status to OpenAI's error type names.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusConflict:
		return "conflict_error"
	default:
		return "api_error"
	}
}

// writeError answers with status and OpenAI's error shape; code is a short
// stable label ("rollout_not_found", "rollout_finished", …).
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Message: msg, Type: errorType(status), Code: code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a failed write means the client went away
}

// chatCompletion is OpenAI's unstreamed chat answer.
type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   usage        `json:"usage"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      answerMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
	Logprobs     *struct{}     `json:"logprobs"`
}

// answerMessage is the assistant message the gateway returns: the engine's
// content and its tool calls (as the engine or the client parsed them).
type answerMessage struct {
	Role             string            `json:"role"`
	Content          *string           `json:"content"`
	ReasoningContent string            `json:"reasoning_content,omitempty"`
	ToolCalls        []openai.ToolCall `json:"tool_calls,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// chatChunk is one server-sent event of a streamed chat answer.
type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []chunkToolCall `json:"tool_calls,omitempty"`
}

type chunkToolCall struct {
	Index    int                 `json:"index"`
	ID       string              `json:"id,omitempty"`
	Type     string              `json:"type,omitempty"`
	Function openai.FunctionCall `json:"function"`
}

// textCompletion is OpenAI's completions answer, and each event of a
// streamed one (Usage only on the last, when asked).
type textCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []textChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

type textChoice struct {
	Index        int           `json:"index"`
	Text         string        `json:"text"`
	FinishReason *string       `json:"finish_reason"`
	Logprobs     *textLogprobs `json:"logprobs"`
	// PromptTokenIDs and TokenIDs are the engine's ids, when the agent
	// asked for them (return_token_ids, vLLM's extension).
	PromptTokenIDs []int32 `json:"prompt_token_ids,omitempty"`
	TokenIDs       []int32 `json:"token_ids,omitempty"`
}

// textLogprobs is the completions logprobs object: each token named
// "token_id:N" (vLLM's return_tokens_as_token_ids form; the gateway holds
// ids, not their text), its logprob, and the sampled token alone as its
// top alternative.
type textLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

// modelList is the answer of GET …/models.
type modelList struct {
	Object string      `json:"object"`
	Data   []modelInfo `json:"data"`
}

type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}
