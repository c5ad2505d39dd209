package gatewaytest

import (
	"fmt"
	"net/http"
	"strings"
)

// ConverseMessages runs c on the Anthropic Messages API (POST
// base/messages) the way the Anthropic SDK's tool-use loop does: the
// system prompt as system, the tools with input_schema, each answer's
// content blocks resent as the assistant message (thinking included), and
// one user message of tool_result blocks for its tool_use blocks. It
// returns the answer's text once the model stops for another reason than
// tool_use. max_tokens, which the API requires, is c.MaxTokens or 4096.
func ConverseMessages(client *http.Client, base string, c Conversation, run func(Call) string) (string, error) {
	var tools []any
	for _, t := range c.Tools {
		fn := chatFunction(t)
		tools = append(tools, map[string]any{"name": fn["name"], "description": fn["description"], "input_schema": fn["parameters"]})
	}
	msgs := []any{map[string]any{"role": "user", "content": c.User}}
	for range c.MaxTurns {
		maxTokens := c.MaxTokens
		if maxTokens == 0 {
			maxTokens = 4096
		}
		req := map[string]any{"model": "any", "max_tokens": maxTokens, "system": c.System, "messages": msgs, "tools": tools}
		for k, v := range c.Extra {
			req[k] = v
		}
		var out struct {
			Content    []map[string]any `json:"content"`
			StopReason string           `json:"stop_reason"`
		}
		if err := postJSON(client, base+"/messages", c.Delegation, req, &out); err != nil {
			return "", err
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": out.Content})
		var calls []Call
		var text strings.Builder
		for _, b := range out.Content {
			switch b["type"] {
			case "tool_use":
				id, _ := b["id"].(string)
				name, _ := b["name"].(string)
				args, _ := b["input"].(map[string]any)
				calls = append(calls, Call{ID: id, Name: name, Args: args})
			case "text":
				s, _ := b["text"].(string)
				text.WriteString(s)
			}
		}
		if out.StopReason != "tool_use" || len(calls) == 0 {
			return text.String(), nil
		}
		var results []any
		for i, r := range runCalls(calls, run) {
			results = append(results, map[string]any{"type": "tool_result", "tool_use_id": calls[i].ID, "content": r})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": results})
	}
	return "", fmt.Errorf("no final message in %d turns", c.MaxTurns)
}
