// Package gatewaytest is an agent written only to the gateway's wire
// contract (docs/gateway.md), for tests and benchmarks: it knows OpenAI's
// chat shapes and nothing of the project's client, so it checks the
// gateway as a user's agent would use it.
package gatewaytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Conversation is one agent's chat: its prompts, the tools it offers
// (OpenAI function specs), how many turns it may take and how many tokens
// each answer may have (sent as the API names it; 0: not sent), the extra request
// fields it sends (for example a temperature the run overrides) and, for
// a sub-agent, the id of the planner's tool call that started it (sent as
// the X-Mgrpo-Delegation header, so the gateway links the two).
type Conversation struct {
	System, User string
	Tools        []any
	MaxTurns     int
	MaxTokens    int
	Extra        map[string]any
	Delegation   string
}

// DelegationHeader is the gateway's header naming the planner's tool call
// that started a sub-agent's conversation (docs/gateway.md); spelled out
// here, as an agent in another language would, instead of imported.
const DelegationHeader = "X-Mgrpo-Delegation"

// Call is one tool call of a model's answer: its id (as the gateway
// answered it), the function's name and its arguments.
type Call struct {
	ID, Name string
	Args     map[string]any
}

// Converse runs c against base (a role's OpenAI base URL) until the model
// answers without tool calls, and returns that answer. Each turn's tool
// calls run in parallel through run; arguments that are not JSON become an
// error observation, as an agent framework would send.
func Converse(client *http.Client, base string, c Conversation, run func(Call) string) (string, error) {
	msgs := []any{map[string]any{"role": "system", "content": c.System}, map[string]any{"role": "user", "content": c.User}}
	for range c.MaxTurns {
		req := map[string]any{"model": "any", "messages": msgs, "tools": c.Tools}
		if c.MaxTokens > 0 {
			req["max_tokens"] = c.MaxTokens
		}
		for k, v := range c.Extra {
			req[k] = v
		}
		body, err := json.Marshal(req)
		if err != nil {
			return "", err
		}
		hreq, err := http.NewRequest(http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		hreq.Header.Set("Content-Type", "application/json")
		if c.Delegation != "" {
			hreq.Header.Set(DelegationHeader, c.Delegation)
		}
		resp, err := client.Do(hreq)
		if err != nil {
			return "", err
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%s: %s", resp.Status, raw)
		}
		var out struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
			return "", fmt.Errorf("bad answer %.200s", raw)
		}
		m := out.Choices[0].Message
		msgs = append(msgs, m)
		calls, _ := m["tool_calls"].([]any)
		if len(calls) == 0 {
			content, _ := m["content"].(string)
			return content, nil
		}
		results := make([]string, len(calls))
		var wg sync.WaitGroup
		for i, call := range calls {
			fn, _ := call.(map[string]any)["function"].(map[string]any)
			name, _ := fn["name"].(string)
			argText, _ := fn["arguments"].(string)
			id, _ := call.(map[string]any)["id"].(string)
			wg.Go(func() {
				var args map[string]any
				if err := json.Unmarshal([]byte(argText), &args); err != nil {
					results[i] = "Invalid arguments: " + err.Error()
					return
				}
				results[i] = run(Call{ID: id, Name: name, Args: args})
			})
		}
		wg.Wait()
		for i, call := range calls {
			fn, _ := call.(map[string]any)["function"].(map[string]any)
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": call.(map[string]any)["id"], "name": fn["name"], "content": results[i]})
		}
	}
	return "", fmt.Errorf("no final message in %d turns", c.MaxTurns)
}
