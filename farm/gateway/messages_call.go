package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// messagesCall checks a Messages request and translates it into the
// gateway's call: the system prompt as a system message; each assistant
// message's thinking, text and tool_use blocks as one assistant message
// (thinking as its reasoning, each tool_use's input as the engine's own
// argument text when the gateway answered that call); each user message's
// tool_result blocks as tool messages, then its text as a user message.
func (g *Gateway) messagesCall(s *session, role string, req messagesRequest) (call, error) {
	if err := refuseMessagesFields(req); err != nil {
		return call{}, err
	}
	var c call
	system, err := systemText(req.System)
	if err != nil {
		return call{}, err
	}
	if system != "" {
		c.msgs = append(c.msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: system})
	}
	var args map[string]string
	g.memory.with(s.id, func(m *rolloutMemory) {
		args = make(map[string]string, len(m.toolArgs))
		for k, v := range m.toolArgs {
			args[k] = v
		}
	})
	var calls map[string]bool // the tool_use ids of the last assistant message
	for i, m := range req.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		blocks, err := anthropicBlocks(at+".content", m.Content)
		if err != nil {
			return call{}, err
		}
		switch m.Role {
		case "assistant":
			msg, ids, err := assistantMessage(at, blocks, args)
			if err != nil {
				return call{}, err
			}
			c.msgs, calls = append(c.msgs, msg), ids
		case "user":
			msgs, err := userMessages(at, blocks, calls)
			if err != nil {
				return call{}, err
			}
			c.msgs, calls = append(c.msgs, msgs...), nil
		default:
			return call{}, refuseField(at+".role", "%q: want user or assistant", m.Role)
		}
	}
	if len(req.Messages) == 0 {
		return call{}, refuseField("messages", "at least one message is required")
	}
	for i, t := range req.Tools {
		if t.Type != "" && t.Type != "custom" {
			return call{}, refuseField(fmt.Sprintf("tools[%d].type", i), "%q: server tools are not served (the agent runs its own tools)", t.Type)
		}
		if t.Name == "" {
			return call{}, refuseField(fmt.Sprintf("tools[%d].name", i), "required")
		}
		if isNull(t.InputSchema) || bytes.TrimSpace(t.InputSchema)[0] != '{' {
			return call{}, refuseField(fmt.Sprintf("tools[%d].input_schema", i), "want a JSON Schema object")
		}
		c.tools = append(c.tools, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	c.stream = req.Stream
	c.sampling.Stop = req.StopSequences
	c.sampling.MaxTokens = g.capTokens(role, req.MaxTokens)
	if err := g.cfg.Bounds.checkCall(c); err != nil {
		return call{}, err
	}
	g.noteSampling(s, role, req.Temperature, req.TopP)
	return c, nil
}

// refuseMessagesFields refuses what the engine behind a role cannot do.
func refuseMessagesFields(req messagesRequest) error {
	switch {
	case req.MaxTokens == nil:
		return refuseField("max_tokens", "required")
	case *req.MaxTokens < 1:
		return refuseField("max_tokens", "%d: want at least 1", *req.MaxTokens)
	case !isNull(req.MCPServers):
		return refuseField("mcp_servers", "not served: the agent runs its own tools")
	case !isNull(req.Container):
		return refuseField("container", "not served: the agent runs its own tools")
	case req.Thinking != nil && req.Thinking.Type != "enabled" && req.Thinking.Type != "disabled" && req.Thinking.Type != "adaptive":
		return refuseField("thinking.type", "%q: want enabled, disabled or adaptive", req.Thinking.Type)
	}
	if tc := req.ToolChoice; tc != nil {
		switch {
		case tc.Type != "auto":
			return refuseField("tool_choice.type", "%q: only \"auto\" is served (the engine samples freely among the tools)", tc.Type)
		case tc.DisableParallelToolUse:
			return refuseField("tool_choice.disable_parallel_tool_use", "the engine's answer is not limited to one tool call")
		}
	}
	return nil
}

// systemText reads system: a string or a list of text blocks.
func systemText(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	blocks, err := anthropicBlocks("system", raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for j, bl := range blocks {
		if bl.Type != "text" || bl.Text == nil {
			return "", refuseField(fmt.Sprintf("system[%d].type", j), "%q: want text blocks", bl.Type)
		}
		if j > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(*bl.Text)
	}
	return b.String(), nil
}

// anthropicBlocks reads a content: a string (one text block) or a list of
// blocks.
func anthropicBlocks(at string, raw json.RawMessage) ([]anthropicBlock, error) {
	if isNull(raw) {
		return nil, refuseField(at, "required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: &s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, refuseField(at, "want a string or a list of content blocks: %v", err)
	}
	return blocks, nil
}

// assistantMessage joins an assistant message's blocks into one message;
// ids are its tool_use ids, which the next user message's tool_results
// must answer.
func assistantMessage(at string, blocks []anthropicBlock, args map[string]string) (openai.ChatCompletionMessage, map[string]bool, error) {
	m := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	ids := map[string]bool{}
	for j, b := range blocks {
		bat := fmt.Sprintf("%s.content[%d]", at, j)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return m, nil, refuseField(bat+".text", "required")
			}
			m.Content += *b.Text
		case "thinking":
			if b.Thinking == nil {
				return m, nil, refuseField(bat+".thinking", "required")
			}
			m.ReasoningContent += *b.Thinking
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return m, nil, refuseField(bat, "a tool_use needs id and name")
			}
			text, err := toolUseArgs(bat, b, args)
			if err != nil {
				return m, nil, err
			}
			m.ToolCalls = append(m.ToolCalls, openai.ToolCall{ID: b.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: b.Name, Arguments: text}})
			ids[b.ID] = true
		default:
			return m, nil, refuseField(bat+".type", "%q: an assistant message holds text, thinking and tool_use blocks", b.Type)
		}
	}
	return m, ids, nil
}

// toolUseArgs is a tool_use's argument text: the engine's, when the gateway
// answered the call and the agent sent its input back unchanged; else the
// input object's JSON.
func toolUseArgs(at string, b anthropicBlock, args map[string]string) (string, error) {
	in := bytes.TrimSpace(b.Input)
	if len(in) == 0 || in[0] != '{' {
		return "", refuseField(at+".input", "want an object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, in); err != nil {
		return "", refuseField(at+".input", "%v", err)
	}
	// An engine's text that was no JSON object was answered as {}.
	if text, ok := args[b.ID]; ok && (sameJSON(text, buf.String()) || (!isObject(text) && buf.String() == "{}")) {
		return text, nil
	}
	return buf.String(), nil
}

// userMessages translates a user message: its tool_result blocks (each
// answering a tool_use of calls, the assistant message before it) as tool
// messages, then its text blocks as one user message.
func userMessages(at string, blocks []anthropicBlock, calls map[string]bool) ([]openai.ChatCompletionMessage, error) {
	var out []openai.ChatCompletionMessage
	var text strings.Builder
	hasText := false
	for j, b := range blocks {
		bat := fmt.Sprintf("%s.content[%d]", at, j)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return nil, refuseField(bat+".text", "required")
			}
			text.WriteString(*b.Text)
			hasText = true
		case "tool_result":
			if !calls[b.ToolUseID] {
				return nil, refuseField(bat+".tool_use_id", "%q: no tool_use of that id in the assistant message before it", b.ToolUseID)
			}
			content, err := toolResultText(bat+".content", b.Content)
			if err != nil {
				return nil, err
			}
			out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: b.ToolUseID, Content: content})
		default:
			return nil, refuseField(bat+".type", "%q: a user message holds text and tool_result blocks (the engines behind a role take text)", b.Type)
		}
	}
	if hasText {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text.String()})
	}
	if len(out) == 0 {
		return nil, refuseField(at+".content", "no text or tool_result block")
	}
	return out, nil
}

// toolResultText reads a tool_result's content: absent, a string, or text
// blocks.
func toolResultText(at string, raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	blocks, err := anthropicBlocks(at, raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for j, bl := range blocks {
		if bl.Type != "text" || bl.Text == nil {
			return "", refuseField(fmt.Sprintf("%s[%d].type", at, j), "%q: only text is served", bl.Type)
		}
		b.WriteString(*bl.Text)
	}
	return b.String(), nil
}

// isObject reports whether text is a JSON object.
func isObject(text string) bool {
	var v map[string]any
	return json.Unmarshal([]byte(text), &v) == nil && v != nil
}
