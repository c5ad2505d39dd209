package gateway

import (
	"slices"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestCompletionsRecorded checks the completions route as docs/gateway.md
// states it: the prompt goes to the role's client as one user message, the
// answer is a text_completion, and the call is recorded token-exact (the
// engine's prompt and completion ids and logprobs) as a trajectory of its
// own; streamed and token-id prompts are refused.
func TestCompletionsRecorded(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	o, release, done := startHeld(t, g)
	base := o.BaseURLs[RoleExecutor]
	status, body := post(t, base+"/completions", map[string]any{"prompt": []string{"Find A."}, "max_tokens": 50})
	if status != 200 || body["object"] != "text_completion" {
		t.Fatalf("completion: %d %v, want 200 and a text_completion", status, body)
	}
	choices, _ := body["choices"].([]any)
	if len(choices) != 1 || choices[0].(map[string]any)["text"] != "report on Find A." {
		t.Errorf("choices %v, want one with the model's text", choices)
	}
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"streamed", map[string]any{"prompt": "x", "stream": true}},
		{"token ids", map[string]any{"prompt": []int{1, 2}}},
		{"n > 1", map[string]any{"prompt": "x", "n": 2}},
	} {
		if status, body := post(t, base+"/completions", tc.body); status != 400 || errorCode(t, body) != "invalid_request" {
			t.Errorf("%s: %d %v, want 400 invalid_request", tc.name, status, body)
		}
	}
	post(t, o.BaseURLs[RolePlanner]+"/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "q"}}})
	close(release)
	tree := <-done
	if len(tree.Executors) != 1 || len(tree.Executors[0].Turns) != 1 {
		t.Fatalf("%d executor trajectories, want the completion's one with one turn", len(tree.Executors))
	}
	e := tree.Executors[0]
	turn := e.Turns[0]
	prompt := msgIDs(openai.ChatCompletionMessage{Role: "user", Content: "Find A."})
	answer := msgIDs(openai.ChatCompletionMessage{Role: "assistant", Content: "report on Find A."})
	if !slices.Equal(turn.PromptIDs, prompt) || !slices.Equal(turn.CompletionIDs, answer) || len(turn.Logprobs) != len(answer) {
		t.Errorf("turn prompt %v completion %v logprobs %v, want the engine's %v, %v and a logprob each", turn.PromptIDs, turn.CompletionIDs, turn.Logprobs, prompt, answer)
	}
	if e.Task != "Find A." || e.Final != "report on Find A." || !e.FormatOK {
		t.Errorf("executor task %q final %q format_ok %v, want the prompt, the completion and a valid report", e.Task, e.Final, e.FormatOK)
	}
}
