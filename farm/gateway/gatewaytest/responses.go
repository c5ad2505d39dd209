package gatewaytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// ConverseResponses runs c on the Responses API (POST base/responses) the
// way the OpenAI Agents SDK's default model does: stateless, the whole
// history resent each turn as input items (the answer's output items
// echoed verbatim, reasoning included, then a function_call_output per
// call), the system prompt as instructions, the tools flattened from their
// chat specs. It returns the answer's text once the model calls no tool.
func ConverseResponses(client *http.Client, base string, c Conversation, run func(Call) string) (string, error) {
	var tools []any
	for _, t := range c.Tools {
		fn := chatFunction(t)
		tools = append(tools, map[string]any{"type": "function", "name": fn["name"], "description": fn["description"],
			"parameters": fn["parameters"], "strict": false})
	}
	input := []any{map[string]any{"role": "user", "content": c.User}}
	for range c.MaxTurns {
		req := map[string]any{"model": "any", "instructions": c.System, "input": input, "tools": tools, "include": []any{}, "stream": false}
		if c.MaxTokens > 0 {
			req["max_output_tokens"] = c.MaxTokens
		}
		for k, v := range c.Extra {
			req[k] = v
		}
		var out struct {
			Output []map[string]any `json:"output"`
		}
		if err := postJSON(client, base+"/responses", c.Delegation, req, &out); err != nil {
			return "", err
		}
		var calls []Call
		var text strings.Builder
		for _, it := range out.Output {
			input = append(input, it)
			switch it["type"] {
			case "function_call":
				id, _ := it["call_id"].(string)
				name, _ := it["name"].(string)
				argText, _ := it["arguments"].(string)
				calls = append(calls, Call{ID: id, Name: name, Args: parseArgs(argText)})
			case "message":
				parts, _ := it["content"].([]any)
				for _, p := range parts {
					if s, ok := p.(map[string]any)["text"].(string); ok {
						text.WriteString(s)
					}
				}
			}
		}
		if len(calls) == 0 {
			return text.String(), nil
		}
		for i, r := range runCalls(calls, run) {
			input = append(input, map[string]any{"type": "function_call_output", "call_id": calls[i].ID, "output": r})
		}
	}
	return "", fmt.Errorf("no final message in %d turns", c.MaxTurns)
}

// chatFunction is the function part of an OpenAI chat tool spec.
func chatFunction(t any) map[string]any {
	m, _ := t.(map[string]any)
	fn, _ := m["function"].(map[string]any)
	if fn == nil {
		return map[string]any{}
	}
	return fn
}

// parseArgs decodes a call's argument text; nil when it is no JSON
// object (runCalls answers such a call with an error observation).
func parseArgs(text string) map[string]any {
	var args map[string]any
	if json.Unmarshal([]byte(text), &args) != nil {
		return nil
	}
	return args
}

// runCalls runs a turn's calls in parallel and returns their results in
// order.
func runCalls(calls []Call, run func(Call) string) []string {
	results := make([]string, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			if c.Args == nil {
				results[i] = "Invalid arguments: not a JSON object"
				return
			}
			results[i] = run(c)
		})
	}
	wg.Wait()
	return results
}

// postJSON posts body to url (with the delegation header when set) and
// decodes a 200 answer into out.
func postJSON(client *http.Client, url, delegation string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if delegation != "" {
		req.Header.Set(DelegationHeader, delegation)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("bad answer %.200s: %w", raw, err)
	}
	return nil
}
