package llm

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestSimFallbacks checks that an old server (ids stripped from the chat
// route) yields exactly the tokens and message a new one does, and that the
// detection is logged.
func TestSimFallbacks(t *testing.T) {
	cases := []struct {
		name, dialect, logWant string
		wrap                   []string // top-level fields, then choice fields
		top                    int
	}{
		{"vllm-pre-0.10.2", DialectVLLM, "older than 0.10.2", []string{"prompt_token_ids", "token_ids"}, 1},
		{"sglang-native", DialectSGLang, "older than 0.5.13", []string{"prompt_token_ids", "meta_info", "token_ids"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			modern := mustSim(t, simConfig(tc.dialect, 5), nil)
			old := mustSim(t, simConfig(tc.dialect, 5), stripFields("/v1/chat/completions", tc.wrap[:tc.top], tc.wrap[tc.top:]))
			var logs syncBuffer
			cm := mustClient(t, Config{Role: "executor", Dialect: tc.dialect, Endpoints: []string{modern.ts.URL}, CaptureTokens: true})
			co := mustClient(t, Config{Role: "executor", Dialect: tc.dialect, Endpoints: []string{old.ts.URL}, CaptureTokens: true, Logger: bufferLogger(&logs)})
			w := mustWorld(t)
			for i := range 3 {
				q := w.Questions[i].Question
				tm, err := runTrajectory(context.Background(), cm, w, q, "", 6, int64(7*i+1))
				if err != nil {
					t.Fatal(err)
				}
				to, err := runTrajectory(context.Background(), co, w, q, "", 6, int64(7*i+1))
				if err != nil {
					t.Fatal(err)
				}
				if len(tm) != len(to) {
					t.Fatalf("question %d: %d turns new, %d turns old", i, len(tm), len(to))
				}
				for k := range tm {
					a, b := tm[k], to[k]
					if !slices.Equal(a.PromptIDs, b.PromptIDs) || !slices.Equal(a.CompletionIDs, b.CompletionIDs) || !slices.Equal(a.Logprobs, b.Logprobs) {
						t.Fatalf("question %d turn %d: token data differs between new and old server", i, k)
					}
					if a.Message.Content != b.Message.Content || a.Message.ReasoningContent != b.Message.ReasoningContent || len(a.ToolCalls) != len(b.ToolCalls) {
						t.Fatalf("question %d turn %d: message differs:\nnew %+v\nold %+v", i, k, a.Message, b.Message)
					}
				}
				seqs, drifts, err := Sequences(to)
				if err != nil || len(seqs) != 1 || len(drifts) != 0 {
					t.Fatalf("old server trajectory: %d sequences, %d drifts, %v", len(seqs), len(drifts), err)
				}
			}
			if !strings.Contains(logs.String(), tc.logWant) {
				t.Errorf("detection not logged; logs:\n%s", logs.String())
			}
		})
	}
}
