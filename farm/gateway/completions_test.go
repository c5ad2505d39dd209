package gateway

import (
	"slices"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestCompletionsRecorded checks the completions route as docs/gateway.md
// states it: the prompt goes to the role's model as it is, as a raw
// completion (no chat call, no template), the answer is a
// text_completion, and the call is recorded token-exact (the engine's
// prompt and completion ids and logprobs) as a trajectory of its own;
// token-id prompts are sent as ids, bad prompts are refused.
func TestCompletionsRecorded(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{})
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
	ex := models[RoleExecutor]
	if raws := ex.completions(); len(raws) != 1 || raws[0].Prompt != "Find A." || raws[0].PromptIDs != nil || len(ex.requests()) != 0 {
		t.Errorf("the model got completions %+v and %d chat calls, want the raw prompt once and no chat", raws, len(ex.requests()))
	}
	if status, _ := post(t, base+"/completions", map[string]any{"prompt": []int{70, 105}}); status != 200 {
		t.Errorf("token-id prompt: %d, want 200", status)
	}
	if raws := ex.completions(); len(raws) != 2 || !slices.Equal(raws[1].PromptIDs, []int32{70, 105}) {
		t.Errorf("the token-id prompt reached the model as %+v, want ids [70 105]", raws[len(raws)-1])
	}
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"empty", map[string]any{"prompt": ""}},
		{"absent", map[string]any{"max_tokens": 3}},
		{"empty list", map[string]any{"prompt": []string{}}},
		{"empty ids", map[string]any{"prompt": [][]int{{}}}},
		{"several prompts", map[string]any{"prompt": []string{"a", "b"}}},
		{"several id prompts", map[string]any{"prompt": [][]int{{1}, {2}}}},
		{"negative id", map[string]any{"prompt": []int{1, -2}}},
		{"n > 1", map[string]any{"prompt": "x", "n": 2}},
		{"best_of > 1", map[string]any{"prompt": "x", "best_of": 3}},
		{"echo", map[string]any{"prompt": "x", "echo": true}},
		{"bad stop", map[string]any{"prompt": "x", "stop": 3}},
	} {
		if status, body := post(t, base+"/completions", tc.body); status != 400 || errorCode(t, body) != "invalid_request" {
			t.Errorf("%s: %d %v, want 400 invalid_request", tc.name, status, body)
		}
	}
	post(t, o.BaseURLs[RolePlanner]+"/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "q"}}})
	close(release)
	tree := <-done
	if len(tree.Executors) != 2 || len(tree.Executors[0].Turns) != 1 {
		t.Fatalf("%d executor trajectories, want the two completions' with one turn each", len(tree.Executors))
	}
	e := tree.Executors[0]
	turn := e.Turns[0]
	prompt, answer := runeIDs("Find A."), runeIDs("report on Find A.")
	if !slices.Equal(turn.PromptIDs, prompt) || !slices.Equal(turn.CompletionIDs, answer) || len(turn.Logprobs) != len(answer) {
		t.Errorf("turn prompt %v completion %v logprobs %v, want the engine's %v, %v and a logprob each", turn.PromptIDs, turn.CompletionIDs, turn.Logprobs, prompt, answer)
	}
	if e.Task != "Find A." || e.Final != "report on Find A." || !e.FormatOK {
		t.Errorf("executor task %q final %q format_ok %v, want the prompt, the completion and a valid report", e.Task, e.Final, e.FormatOK)
	}
}

// FuzzParsePrompt holds the prompt parser to its contract on any JSON: no
// panic, and an accepted prompt is non-empty text or a non-empty list of
// ids of the range the engines take.
func FuzzParsePrompt(f *testing.F) {
	for _, s := range []string{`"hi"`, `["hi"]`, `[1,2]`, `[[1,2]]`, `[]`, `[[]]`, `["a","b"]`, `[1,"a"]`, `[-1]`, `null`, `[1.5]`, `[[1],[2]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := parsePrompt(raw)
		if err != nil {
			return
		}
		if p.ids == nil && p.text == "" {
			t.Errorf("%q: accepted an empty prompt", raw)
		}
		for _, id := range p.ids {
			if id < 0 {
				t.Errorf("%q: accepted id %d", raw, id)
			}
		}
		if p.ids != nil && len(p.ids) == 0 {
			t.Errorf("%q: accepted an empty id list", raw)
		}
	})
}
