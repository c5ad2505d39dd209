package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// MessageRecord is an assistant message as rollouts.jsonl holds it: the
// OpenAI chat message layout, content being a string or, for a server that
// sent multi-part content, an array of parts.
type MessageRecord struct {
	Role string `json:"role"`
	// Content is the text content; Parts, when not empty, is the multi-part
	// content instead (a JSON array), written under the same key.
	Content          string              `json:"content,omitempty"`
	Parts            json.RawMessage     `json:"-"`
	Refusal          string              `json:"refusal,omitempty"`
	Name             string              `json:"name,omitempty"`
	ReasoningContent string              `json:"reasoning_content,omitempty"`
	FunctionCall     *FunctionCallRecord `json:"function_call,omitempty"`
	ToolCalls        []ToolCallRecord    `json:"tool_calls,omitempty"`
	ToolCallID       string              `json:"tool_call_id,omitempty"`
}

// ErrContentAndParts is returned for a message with both text and
// multi-part content, which has no encoding.
var ErrContentAndParts = errors.New("message has both text and multi-part content")

// plainMessageRecord is MessageRecord without its methods.
type plainMessageRecord MessageRecord

// partsMessageRecord is the layout of a message with multi-part content:
// the parts take the content key, after the refusal.
type partsMessageRecord struct {
	Role             string              `json:"role"`
	Refusal          string              `json:"refusal,omitempty"`
	Parts            json.RawMessage     `json:"content,omitempty"`
	Name             string              `json:"name,omitempty"`
	ReasoningContent string              `json:"reasoning_content,omitempty"`
	FunctionCall     *FunctionCallRecord `json:"function_call,omitempty"`
	ToolCalls        []ToolCallRecord    `json:"tool_calls,omitempty"`
	ToolCallID       string              `json:"tool_call_id,omitempty"`
}

// MarshalJSON writes the message in the layout go-openai's chat message
// has: with Parts under "content" when there are parts.
func (m MessageRecord) MarshalJSON() ([]byte, error) {
	if len(m.Parts) == 0 {
		return json.Marshal(plainMessageRecord(m))
	}
	if m.Content != "" {
		return nil, ErrContentAndParts
	}
	return json.Marshal(partsMessageRecord{Role: m.Role, Refusal: m.Refusal, Parts: m.Parts, Name: m.Name,
		ReasoningContent: m.ReasoningContent, FunctionCall: m.FunctionCall, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID})
}

// UnmarshalJSON reads a message whose content is a string, null or an
// array of parts (kept in Parts).
func (m *MessageRecord) UnmarshalJSON(b []byte) error {
	var p partsMessageRecord
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = MessageRecord{Role: p.Role, Refusal: p.Refusal, Name: p.Name, ReasoningContent: p.ReasoningContent,
		FunctionCall: p.FunctionCall, ToolCalls: p.ToolCalls, ToolCallID: p.ToolCallID}
	switch c := bytes.TrimSpace(p.Parts); {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
	case c[0] == '[':
		m.Parts = c
	default:
		if err := json.Unmarshal(c, &m.Content); err != nil {
			return fmt.Errorf("message content: %w", err)
		}
	}
	return nil
}
