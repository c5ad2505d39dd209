package llm

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestTokenPathUnderTemplateBehaviours drives a whole executor trajectory
// the token-in/token-out way under each template behaviour: each turn's
// prompt is the previous prompt + the sampled ids + "\n" + the new messages'
// ids, rendered as the difference of a fixed one-message conversation with
// and without them. The server must read those prompts back (the policy
// plays on), and its generation log must show every generation saw exactly
// the sequence built.
func TestTokenPathUnderTemplateBehaviours(t *testing.T) {
	for name, set := range map[string]func(*Config){
		"default":    func(*Config) {},
		"strip":      func(c *Config) { c.StripReasoning = true },
		"qwen3strip": func(c *Config) { c.StripReasoningBeforeLastQuery = true },
		"merge":      func(c *Config) { c.MergeToolResults = true },
		"canonical":  func(c *Config) { c.CanonicalToolArgs = true },
		"trim":       func(c *Config) { c.TrimContent = true },
		"all": func(c *Config) {
			c.StripReasoning, c.MergeToolResults, c.CanonicalToolArgs, c.TrimContent, c.StrictReasoningInput = true, true, true, true, true
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(DialectVLLM)
			cfg.RecordGenerations = true
			set(&cfg)
			s, ts := MustServer(t, cfg)
			nl := s.Tokenizer().Encode("\n")
			fixed := userMsg("x")
			delta := func(news []map[string]any) []int {
				var a, b renderResp
				st, _, body := post(t, ts.URL+"/v1/chat/completions/render", map[string]any{"messages": fixed, "tools": researchTools, "add_generation_prompt": false})
				decodeOK(t, st, body, &a)
				st, _, body = post(t, ts.URL+"/v1/chat/completions/render", map[string]any{"messages": append(slices.Clone(fixed), news...), "tools": researchTools})
				decodeOK(t, st, body, &b)
				if len(b.TokenIDs) <= len(a.TokenIDs) || !slices.Equal(b.TokenIDs[:len(a.TokenIDs)], a.TokenIDs) {
					t.Fatalf("the fixed conversation's render is not a prefix of its render with the new messages")
				}
				return b.TokenIDs[len(a.TokenIDs):]
			}
			prompt := render(t, ts.URL, userMsg(question), researchTools)
			var built [][]int
			for turn := 0; turn < 6; turn++ {
				built = append(built, slices.Clone(prompt))
				var gr generateResp
				st, _, body := post(t, ts.URL+"/inference/v1/generate", map[string]any{"token_ids": prompt, "sampling_params": map[string]any{"seed": turn}})
				decodeOK(t, st, body, &gr)
				ids := gr.Choices[0].TokenIDs
				var dr struct {
					Choices []struct {
						Message struct {
							ToolCalls []struct {
								ID       string `json:"id"`
								Function struct {
									Name string `json:"name"`
								} `json:"function"`
							} `json:"tool_calls"`
						} `json:"message"`
					} `json:"choices"`
				}
				st, _, body = post(t, ts.URL+"/v1/chat/completions/derender", map[string]any{"model": DefaultModel, "generate_response": json.RawMessage(mustMarshal(t, gr)),
					"chat_request": map[string]any{"tools": researchTools}})
				decodeOK(t, st, body, &dr)
				calls := dr.Choices[0].Message.ToolCalls
				if len(calls) == 0 {
					break // the executor reported
				}
				var news []map[string]any
				for _, c := range calls {
					news = append(news, map[string]any{"role": "tool", "tool_call_id": c.ID, "content": "No results for " + c.Function.Name + ".\n"})
				}
				prompt = slices.Concat(prompt, ids, nl, delta(news))
			}
			log := s.Generations()
			if len(log) != len(built) || len(log) < 2 {
				t.Fatalf("%d generations logged, %d prompts built; want a multi-turn trajectory", len(log), len(built))
			}
			for i, g := range log {
				if !slices.Equal(g.PromptIDs, built[i]) {
					t.Errorf("turn %d: the engine saw another prompt than the sequence built", i)
				}
				if i > 0 && !slices.Equal(built[i][:len(built[i-1])+len(log[i-1].IDs)], slices.Concat(built[i-1], log[i-1].IDs)) {
					t.Errorf("turn %d: the prompt does not extend the previous prompt + sampled ids", i)
				}
			}
		})
	}
}
