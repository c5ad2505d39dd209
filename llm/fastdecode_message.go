package llm

import (
	openai "github.com/sashabaranov/go-openai"
)

// message decodes a choice's message as ChatMessage.UnmarshalJSON does,
// for the shape servers send: role, string (or null) texts, reasoning,
// function and tool calls with string fields. Anything else — multi-part
// content, a value of another type, a duplicate key, a key matching a
// field only by case folding — is refused (false), and the caller leaves
// the message to encoding/json.
func (s *jscan) message(dst *ChatMessage) bool {
	var (
		m    ChatMessage
		seen uint
	)
	ok := s.members(func(key []byte) bool {
		switch string(key) {
		case "role":
			return s.once(&seen, 1) && s.textTo(&m.Role)
		case "content":
			return s.once(&seen, 2) && s.textTo(&m.Content)
		case "refusal":
			return s.once(&seen, 4) && s.textTo(&m.Refusal)
		case "name":
			return s.once(&seen, 8) && s.textTo(&m.Name)
		case "reasoning_content":
			return s.once(&seen, 16) && s.textTo(&m.ReasoningContent)
		case "reasoning":
			return s.once(&seen, 32) && s.textTo(&m.Reasoning)
		case "tool_call_id":
			return s.once(&seen, 64) && s.textTo(&m.ToolCallID)
		case "function_call":
			if !s.once(&seen, 128) {
				return false
			}
			if s.Null() {
				return true
			}
			m.FunctionCall = new(openai.FunctionCall)
			return s.functionCall(m.FunctionCall)
		case "tool_calls":
			return s.once(&seen, 256) && s.toolCalls(&m.ToolCalls)
		}
		return s.other(nil, key, nil, messageFields)
	})
	if ok {
		*dst = m
	}
	return ok
}

// toolCalls decodes a tool call array (null is nil, [] empty).
func (s *jscan) toolCalls(dst *[]openai.ToolCall) bool {
	if s.Null() {
		return true
	}
	if !s.Eat('[') {
		return false
	}
	calls := []openai.ToolCall{}
	if s.Eat(']') {
		*dst = calls
		return true
	}
	for {
		calls = append(calls, openai.ToolCall{})
		if !s.toolCall(&calls[len(calls)-1]) {
			return false
		}
		if s.Eat(',') {
			continue
		}
		if !s.Eat(']') {
			return false
		}
		*dst = calls
		return true
	}
}

// toolCall decodes one tool call object.
func (s *jscan) toolCall(tc *openai.ToolCall) bool {
	var seen uint
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.once(&seen, 1) && s.textTo(&tc.ID)
		case "type":
			return s.once(&seen, 2) && s.textTo((*string)(&tc.Type))
		case "function":
			return s.once(&seen, 4) && (s.Null() || s.functionCall(&tc.Function))
		case "index":
			if !s.once(&seen, 8) {
				return false
			}
			if s.Null() {
				return true
			}
			v, ok := s.Int()
			tc.Index = &v
			return ok
		}
		return s.other(nil, key, nil, toolCallFields)
	})
}

// functionCall decodes a {"name", "arguments"} object.
func (s *jscan) functionCall(fc *openai.FunctionCall) bool {
	var seen uint
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "name":
			return s.once(&seen, 1) && s.textTo(&fc.Name)
		case "arguments":
			return s.once(&seen, 2) && s.textTo(&fc.Arguments)
		}
		return s.other(nil, key, nil, functionCallFields)
	})
}
