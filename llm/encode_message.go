package llm

import (
	"strconv"

	openai "github.com/sashabaranov/go-openai"
)

// appendMessages appends msgs as json.Marshal writes them (go-openai's
// MarshalJSON for messages without multi-part content: the plainMessage
// layout), or reports false for a message with multi-part content, which is
// left to encoding/json. Writing them directly avoids encoding/json's
// reflection over what is most of a request body.
func appendMessages(dst []byte, msgs []openai.ChatCompletionMessage) ([]byte, bool) {
	dst = append(dst, '[')
	for i := range msgs {
		m := &msgs[i]
		if !plainContent(m) {
			return dst, false
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessage(dst, m)
	}
	return append(dst, ']'), true
}

// plainContent reports whether m encodes in the plainMessage layout: no
// multi-part content (an empty, non-nil MultiContent with no Content
// encodes as a nil one).
func plainContent(m *openai.ChatCompletionMessage) bool {
	return m.MultiContent == nil || len(m.MultiContent) == 0 && m.Content == ""
}

// appendMessage appends one message for which plainContent holds, as
// json.Marshal writes it.
func appendMessage(dst []byte, m *openai.ChatCompletionMessage) []byte {
	dst = append(dst, `{"role":`...)
	dst = appendQuoted(dst, m.Role)
	dst = appendStringMember(dst, `,"content":`, m.Content)
	dst = appendStringMember(dst, `,"refusal":`, m.Refusal)
	dst = appendStringMember(dst, `,"name":`, m.Name)
	dst = appendStringMember(dst, `,"reasoning_content":`, m.ReasoningContent)
	if m.FunctionCall != nil {
		dst = append(dst, `,"function_call":`...)
		dst = appendFunctionCall(dst, m.FunctionCall)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for k := range m.ToolCalls {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = appendToolCall(dst, &m.ToolCalls[k])
		}
		dst = append(dst, ']')
	}
	dst = appendStringMember(dst, `,"tool_call_id":`, m.ToolCallID)
	return append(dst, '}')
}

// appendStringMember appends an omitempty string member: key (with its
// leading comma and colon) and value, or nothing when v is empty.
func appendStringMember(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return appendQuoted(append(dst, key...), v)
}

// appendToolCall appends a ToolCall: index and id are omitempty, type and
// function always written.
func appendToolCall(dst []byte, tc *openai.ToolCall) []byte {
	dst = append(dst, '{')
	if tc.Index != nil {
		dst = append(dst, `"index":`...)
		dst = strconv.AppendInt(dst, int64(*tc.Index), 10)
		dst = append(dst, ',')
	}
	if tc.ID != "" {
		dst = append(dst, `"id":`...)
		dst = appendQuoted(dst, tc.ID)
		dst = append(dst, ',')
	}
	dst = append(dst, `"type":`...)
	dst = appendQuoted(dst, string(tc.Type))
	dst = append(dst, `,"function":`...)
	dst = appendFunctionCall(dst, &tc.Function)
	return append(dst, '}')
}

// appendFunctionCall appends a FunctionCall, both members omitempty.
func appendFunctionCall(dst []byte, fc *openai.FunctionCall) []byte {
	dst = append(dst, '{')
	if fc.Name != "" {
		dst = append(dst, `"name":`...)
		dst = appendQuoted(dst, fc.Name)
	}
	if fc.Arguments != "" {
		if fc.Name != "" {
			dst = append(dst, ',')
		}
		dst = append(dst, `"arguments":`...)
		dst = appendQuoted(dst, fc.Arguments)
	}
	return append(dst, '}')
}
