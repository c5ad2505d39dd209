package llm

import (
	"encoding/json"
	"strings"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// ParseAssistant splits generated text into reasoning, content and tool calls
// the way vLLM's qwen3 reasoning parser and hermes tool parser do, inverting
// RenderAssistant. Without reasoningParser, a think block stays in content.
// Without toolParser, or when any <tool_call> block does not hold a JSON
// object with a string "name" and an object "arguments", every call stays in
// content as text and calls is nil — a malformed call reaches the client as
// text, exactly as it would from vLLM.
func ParseAssistant(text string, reasoningParser, toolParser bool) (reasoning, content string, calls []policy.ToolCall) {
	content = text
	if reasoningParser {
		if rest, ok := strings.CutPrefix(text, ThinkOpen+"\n"); ok {
			if r, after, found := strings.Cut(rest, "\n"+ThinkClose+"\n\n"); found {
				reasoning, content = r, after
			}
		}
	}
	if !toolParser {
		return reasoning, content, nil
	}
	first := strings.Index(content, ToolCallOpen)
	if first < 0 {
		return reasoning, content, nil
	}
	blocks := content[first:]
	for blocks != "" {
		body, ok := strings.CutPrefix(blocks, ToolCallOpen+"\n")
		if !ok {
			return reasoning, content, nil
		}
		js, after, found := strings.Cut(body, "\n"+ToolCallClose)
		if !found {
			return reasoning, content, nil
		}
		call, ok := parseCallJSON(js)
		if !ok {
			return reasoning, content, nil
		}
		calls = append(calls, call)
		if after == "" {
			break
		}
		if blocks, ok = strings.CutPrefix(after, "\n"); !ok {
			return reasoning, content, nil
		}
	}
	head := content[:first]
	if head != "" {
		// RenderAssistant separates content from the first call with one
		// newline; anything else is not our layout, so keep it all as text.
		trimmed, ok := strings.CutSuffix(head, "\n")
		if !ok {
			return reasoning, content, nil
		}
		head = trimmed
	}
	return reasoning, head, calls
}

// parseCallJSON reads {"name": …, "arguments": {…}} in any JSON layout and
// keeps the arguments text byte for byte, so a call the model wrote in the
// canonical layout re-renders exactly.
func parseCallJSON(js string) (policy.ToolCall, bool) {
	var raw struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(js), &raw); err != nil || raw.Name == nil {
		return policy.ToolCall{}, false
	}
	args := strings.TrimSpace(string(raw.Arguments))
	if !strings.HasPrefix(args, "{") {
		return policy.ToolCall{}, false
	}
	c := policy.ToolCall{Name: *raw.Name, Arguments: args}
	return c, true
}

// ParsePrompt recovers the messages and tools of a prompt the template
// rendered, for raw prompts sent to /v1/completions or /generate. A trailing
// generation prompt is dropped. Text that is not ChatML is one user message,
// so a plain-text prompt still reaches the policy. A tools section whose JSON
// does not parse is an error.
func ParsePrompt(text string) ([]Message, []policy.Tool, error) {
	if !strings.Contains(text, IMStart) {
		return []Message{{Role: "user", Content: text}}, nil, nil
	}
	var (
		msgs  []Message
		tools []policy.Tool
	)
	for _, block := range strings.Split(text, IMStart)[1:] {
		role, body, _ := strings.Cut(block, "\n")
		body, closed := strings.CutSuffix(strings.TrimSuffix(body, "\n"), IMEnd)
		if !closed && role == "assistant" {
			// The generation prompt, possibly with a prefilled empty
			// think block: not a message.
			continue
		}
		switch role {
		case "system":
			prompt, declared, err := parseToolsSection(body)
			if err != nil {
				return nil, nil, err
			}
			tools = append(tools, declared...)
			if prompt != "" || declared == nil {
				msgs = append(msgs, Message{Role: "system", Content: prompt})
			}
		case "assistant":
			if rest, ok := strings.CutPrefix(body, emptyThink); ok {
				body = rest
			}
			reasoning, content, calls := ParseAssistant(body, true, true)
			msgs = append(msgs, Message{Role: "assistant", Reasoning: reasoning, Content: content, ToolCalls: calls})
		case "user":
			if results, ok := splitToolResponses(body); ok {
				msgs = append(msgs, results...)
				continue
			}
			msgs = append(msgs, Message{Role: role, Content: body})
		default:
			msgs = append(msgs, Message{Role: role, Content: body})
		}
	}
	return msgs, tools, nil
}

// splitToolResponses reads a user turn that merges tool results
// (Template.MergeToolResults) back into one tool message per result; any
// other user turn is not one.
func splitToolResponses(body string) ([]Message, bool) {
	rest, ok := strings.CutPrefix(body, ToolResponseOpen+"\n")
	if !ok {
		return nil, false
	}
	rest, ok = strings.CutSuffix(rest, "\n"+ToolResponseClose)
	if !ok {
		return nil, false
	}
	var out []Message
	for _, r := range strings.Split(rest, "\n"+ToolResponseClose+"\n"+ToolResponseOpen+"\n") {
		out = append(out, Message{Role: "tool", Content: r})
	}
	return out, true
}
