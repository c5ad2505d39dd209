package llm

import (
	"context"
	"slices"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/realtemplate"
)

// TestTokenPathOnRealQwen3Template runs multi-turn trajectories through the
// token path against an engine that renders with the real Qwen3 tokenizer
// and chat template (which drops earlier reasoning and merges tool results
// on a re-render), with the messages echoed back as LangChain does (no
// reasoning, content "" for tool-call turns): one sequence per trajectory,
// no drift, and every prompt, sampled id and logprob is the one the engine
// logged.
func TestTokenPathOnRealQwen3Template(t *testing.T) {
	for _, reasoning := range []string{"reasoning", "reasoning_content"} {
		t.Run(reasoning, func(t *testing.T) {
			e := realtemplate.Start(t, realtemplate.Options{ReasoningInput: reasoning, ToolRounds: 3})
			c := mustClient(t, Config{Role: "executor", Dialect: DialectVLLM, Model: e.Model, Endpoints: []string{e.URL}, CaptureTokens: true})
			msgs := []openai.ChatCompletionMessage{
				{Role: openai.ChatMessageRoleSystem, Content: "You research."},
				{Role: openai.ChatMessageRoleUser, Content: "Who founded the town of Pradra?"},
			}
			var st TokenState
			var turns []*Turn
			for i := 0; i < 8; i++ {
				tr, err := c.Chat(context.Background(), Request{Messages: msgs, Tools: executorTools(), Tokens: &st,
					Sampling: &Sampling{Seed: ptr(int64(i)), MaxTokens: 512}})
				if err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
				turns = append(turns, tr)
				m := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: tr.Message.Content, ToolCalls: tr.ToolCalls}
				if len(tr.ToolCalls) > 0 {
					m.Content = ""
				}
				msgs = append(msgs, m)
				if len(tr.ToolCalls) == 0 {
					break
				}
				for _, call := range tr.ToolCalls {
					msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Content: "Pradra was founded by Fathalin."})
				}
				if i == 1 {
					msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "Also: when?"})
				}
			}
			if len(turns) < 3 {
				t.Fatalf("%d turns, want a multi-turn trajectory", len(turns))
			}
			seqs, drifts, err := Sequences(turns)
			if err != nil || len(seqs) != 1 || len(drifts) != 0 {
				t.Fatalf("%d sequences, %d drifts (%v), want 1 and 0", len(seqs), len(drifts), err)
			}
			log := e.Log(t)
			if len(log) != len(turns) {
				t.Fatalf("the engine logged %d generations for %d turns", len(log), len(turns))
			}
			for i, tr := range turns {
				g := log[i]
				if !slices.Equal(wide(tr.PromptIDs), g.PromptIDs) || !slices.Equal(wide(tr.CompletionIDs), g.IDs) || !slices.Equal(tr.Logprobs, g.Logprobs) {
					t.Errorf("turn %d: prompt, sampled ids or logprobs differ from the engine's log", i)
				}
			}
		})
	}
}

func wide(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
