package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// fieldError is a refused request field: param names it as the API's
// error shape does (input[2].content[0].type, tool_choice, …).
type fieldError struct {
	param string
	msg   string
}

func (e *fieldError) Error() string { return e.param + ": " + e.msg }

func refuseField(param, format string, args ...any) *fieldError {
	return &fieldError{param: param, msg: fmt.Sprintf(format, args...)}
}

// responsesCall checks a Responses request and translates it into the
// gateway's call: the instructions as the system message, the previous
// response's conversation, then the input items. conv is the conversation
// without the instructions (what a later previous_response_id continues).
func (g *Gateway) responsesCall(s *session, role string, req responsesRequest) (c call, conv []openai.ChatCompletionMessage, err error) {
	if err := refuseResponsesFields(req); err != nil {
		return call{}, nil, err
	}
	instructions, err := instructionsText(req.Instructions)
	if err != nil {
		return call{}, nil, err
	}
	var prev []openai.ChatCompletionMessage
	if req.PreviousResponseID != "" {
		var found bool
		g.memory.with(s.id, func(m *rolloutMemory) {
			if r := m.responses[req.PreviousResponseID]; r != nil && r.role == role {
				prev, found = r.conv, true
			}
		})
		if !found {
			return call{}, nil, refuseField("previous_response_id", "no response %q among this rollout's stored %s responses", req.PreviousResponseID, role)
		}
	}
	items, err := g.inputItems(s.id, req.Input)
	if err != nil {
		return call{}, nil, err
	}
	added, err := itemsMessages(prev, items)
	if err != nil {
		return call{}, nil, err
	}
	conv = append(append(make([]openai.ChatCompletionMessage, 0, len(prev)+len(added)), prev...), added...)
	if len(conv) == 0 {
		return call{}, nil, refuseField("input", "no message to answer")
	}
	c.msgs = conv
	if instructions != "" {
		c.msgs = append([]openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: instructions}}, conv...)
	}
	for i, t := range req.Tools {
		tool, err := t.tool()
		if err != nil {
			return call{}, nil, refuseField(fmt.Sprintf("tools[%d]", i), "%v", err)
		}
		c.tools = append(c.tools, tool)
	}
	c.stream = req.Stream
	c.sampling.MaxTokens = g.capTokens(role, req.MaxOutputTokens)
	if err := g.cfg.Bounds.checkCall(c); err != nil {
		return call{}, nil, err
	}
	g.noteSampling(s, role, req.Temperature, req.TopP)
	return c, conv, nil
}

// refuseResponsesFields refuses what the engine behind a role cannot do.
func refuseResponsesFields(req responsesRequest) error {
	switch {
	case req.Background:
		return refuseField("background", "not served: the gateway answers each call while the agent waits")
	case !isNull(req.Conversation):
		return refuseField("conversation", "conversations are not served; send input items or previous_response_id")
	case !isNull(req.Prompt):
		return refuseField("prompt", "stored prompt templates are not served; send instructions and input")
	case req.Truncation != "" && req.Truncation != "disabled":
		return refuseField("truncation", "%q: the gateway never cuts a conversation (the trajectory would change under the agent)", req.Truncation)
	case req.Reasoning != nil && req.Reasoning.Effort != nil:
		return refuseField("reasoning.effort", "the role's model reasons as its chat template and the run decide; leave effort unset")
	case req.Text != nil && req.Text.Format != nil && req.Text.Format.Type != "" && req.Text.Format.Type != "text":
		return refuseField("text.format.type", "%q: structured output is not enforced by the engine behind a role; use \"text\"", req.Text.Format.Type)
	case req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return refuseField("top_logprobs", "alternatives are not returned; the gateway records the sampled tokens' logprobs itself")
	case req.MaxToolCalls != nil:
		return refuseField("max_tool_calls", "the engine does not cap the tool calls of an answer")
	case req.ParallelToolCalls != nil && !*req.ParallelToolCalls:
		return refuseField("parallel_tool_calls", "false: the engine's answer is not limited to one tool call")
	}
	for i, inc := range req.Include {
		if inc != "reasoning.encrypted_content" {
			return refuseField(fmt.Sprintf("include[%d]", i), "%q is not served", inc)
		}
	}
	if !isNull(req.ToolChoice) {
		var mode string
		if json.Unmarshal(req.ToolChoice, &mode) != nil || mode != "auto" {
			return refuseField("tool_choice", "%s: only \"auto\" is served (the engine samples freely among the tools)", req.ToolChoice)
		}
	}
	return nil
}

// isNull reports an absent or null member.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// instructionsText reads instructions: a string or null.
func instructionsText(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", refuseField("instructions", "want a string")
	}
	return s, nil
}

// tool converts a function tool; other tool types (hosted search, file
// search, computer use, …) are the farm's to run, not an agent's to ask for.
func (t responsesTool) tool() (openai.Tool, error) {
	if t.Type != "function" {
		return openai.Tool{}, fmt.Errorf("type %q: only function tools are served (the agent runs its own tools)", t.Type)
	}
	if t.Name == "" {
		return openai.Tool{}, errors.New("name: required")
	}
	f := &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Strict: t.Strict != nil && *t.Strict}
	if !isNull(t.Parameters) {
		if t.Parameters[0] != '{' {
			return openai.Tool{}, errors.New("parameters: want a JSON Schema object")
		}
		f.Parameters = t.Parameters
	}
	return openai.Tool{Type: openai.ToolTypeFunction, Function: f}, nil
}

// inputItems reads input: a string (one user message) or a list of items,
// each item_reference replaced by the rollout's remembered item.
func (g *Gateway) inputItems(rollout string, raw json.RawMessage) ([]responseItem, error) {
	if isNull(raw) {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		content, _ := json.Marshal(text)
		return []responseItem{{Type: "message", Role: openai.ChatMessageRoleUser, Content: content}}, nil
	}
	var items []responseItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, refuseField("input", "want a string or a list of items: %v", err)
	}
	var missing *fieldError
	g.memory.with(rollout, func(m *rolloutMemory) {
		for i, it := range items {
			if it.Type != "item_reference" {
				continue
			}
			got, ok := m.items[it.ID]
			if !ok {
				missing = refuseField(fmt.Sprintf("input[%d].id", i), "no item %q among this rollout's stored items", it.ID)
				return
			}
			items[i] = got
		}
	})
	if missing != nil {
		return nil, missing
	}
	return items, nil
}

// itemsMessages translates input items into chat messages: a message item
// (or a typeless one with a role) is a message; reasoning, an assistant
// message and the function calls after it are one assistant message, as
// the engine answered them; a function_call_output is a tool message, and
// must answer a function_call of the assistant turn before it (in prev, the
// previous response's conversation, when the items start with outputs).
func itemsMessages(prev []openai.ChatCompletionMessage, items []responseItem) ([]openai.ChatCompletionMessage, error) {
	var out []openai.ChatCompletionMessage
	var cur *openai.ChatCompletionMessage // the assistant message being built
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	assistant := func(fresh bool) *openai.ChatCompletionMessage {
		if cur != nil && fresh && (cur.Content != "" || len(cur.ToolCalls) > 0) {
			flush()
		}
		if cur == nil {
			cur = &openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
		}
		return cur
	}
	for i, it := range items {
		at := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			text, err := messageText(at, it)
			if err != nil {
				return nil, err
			}
			switch it.Role {
			case openai.ChatMessageRoleAssistant:
				assistant(true).Content = text
			case openai.ChatMessageRoleUser, openai.ChatMessageRoleSystem, openai.ChatMessageRoleDeveloper:
				flush()
				role := it.Role
				if role == openai.ChatMessageRoleDeveloper {
					role = openai.ChatMessageRoleSystem
				}
				out = append(out, openai.ChatCompletionMessage{Role: role, Content: text})
			default:
				return nil, refuseField(at+".role", "%q: want user, assistant, system or developer", it.Role)
			}
		case "reasoning":
			text, err := reasoningText(at, it)
			if err != nil {
				return nil, err
			}
			a := assistant(true)
			a.ReasoningContent += text
		case "function_call":
			if it.CallID == "" || it.Name == "" || it.Arguments == nil {
				return nil, refuseField(at, "a function_call needs call_id, name and arguments")
			}
			a := assistant(false)
			a.ToolCalls = append(a.ToolCalls, openai.ToolCall{ID: it.CallID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: it.Name, Arguments: *it.Arguments}})
		case "function_call_output":
			flush()
			if it.CallID == "" {
				return nil, refuseField(at+".call_id", "required")
			}
			if !answersCall(prev, out, it.CallID) {
				return nil, refuseField(at+".call_id", "%q: no function_call of that call_id in the assistant turn before it", it.CallID)
			}
			text, err := outputText(at+".output", it.Output)
			if err != nil {
				return nil, err
			}
			out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: it.CallID, Content: text})
		case "item_reference":
			return nil, refuseField(at, "an item_reference names an item_reference")
		default:
			return nil, refuseField(at+".type", "%q: not served (messages, reasoning, function_call, function_call_output and item_reference are)", it.Type)
		}
	}
	flush()
	return out, nil
}

// messageText reads a message item's content: a string or a list of text
// parts (input_text, output_text; a refusal's text).
func messageText(at string, it responseItem) (string, error) {
	if isNull(it.Content) {
		return "", nil
	}
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		return s, nil
	}
	parts, err := parts(at+".content", it.Content)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for j, p := range parts {
		switch {
		case (p.Type == "input_text" || p.Type == "output_text" || p.Type == "text") && p.Text != nil:
			b.WriteString(*p.Text)
		case p.Type == "refusal" && p.Refusal != nil:
			b.WriteString(*p.Refusal)
		default:
			return "", refuseField(fmt.Sprintf("%s.content[%d].type", at, j), "%q: only text parts are served (the engines behind a role take text)", p.Type)
		}
	}
	return b.String(), nil
}

// reasoningText reads a reasoning item: its reasoning_text content as the
// gateway answered it, else its summary's text.
func reasoningText(at string, it responseItem) (string, error) {
	src, field := it.Content, ".content"
	if isNull(src) {
		src, field = it.Summary, ".summary"
	}
	if isNull(src) {
		return "", nil
	}
	ps, err := parts(at+field, src)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for j, p := range ps {
		if (p.Type != "reasoning_text" && p.Type != "summary_text") || p.Text == nil {
			return "", refuseField(fmt.Sprintf("%s%s[%d].type", at, field, j), "%q: want reasoning_text or summary_text with text", p.Type)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// outputText reads a function call's output: a string or a list of text
// parts.
func outputText(at string, raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	ps, err := parts(at, raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for j, p := range ps {
		if (p.Type != "input_text" && p.Type != "output_text") || p.Text == nil {
			return "", refuseField(fmt.Sprintf("%s[%d].type", at, j), "%q: only text parts are served", p.Type)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

func parts(at string, raw json.RawMessage) ([]contentPart, error) {
	var ps []contentPart
	if err := json.Unmarshal(raw, &ps); err != nil {
		return nil, refuseField(at, "want a string or a list of content parts")
	}
	return ps, nil
}

// answersCall reports whether id is a tool call of the last assistant
// message of prev followed by out: a tool message answers the turn right
// before it, as the chat template renders it.
func answersCall(prev, out []openai.ChatCompletionMessage, id string) bool {
	for _, msgs := range [][]openai.ChatCompletionMessage{out, prev} {
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role != openai.ChatMessageRoleAssistant {
				continue
			}
			for _, tc := range msgs[i].ToolCalls {
				if tc.ID == id {
					return true
				}
			}
			return false
		}
	}
	return false
}
