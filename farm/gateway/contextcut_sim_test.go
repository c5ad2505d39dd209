package gateway

import (
	"sync"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestContextCutSim: a planner trajectory whose sequence in tokens (every
// earlier reasoning block kept) outgrows the context while the template's
// rendering of its conversation (reasoning dropped) still fits is
// continued from that rendering, a new sequence recorded as a context cut
// at its turn, not refused; drift stays 0.
func TestContextCutSim(t *testing.T) {
	const maxTokens, turns = 64, 3
	play := func(t *testing.T, maxModelLen int) *agents.Rollout {
		t.Helper()
		g, _, _ := simGateway(t, llm.DialectVLLM, maxTokens, func(c *simllm.Config) {
			c.StripReasoning = true
			if maxModelLen > 0 {
				c.MaxModelLen = maxModelLen
			}
		})
		g.cfg.MaxTokens[RolePlanner] = maxTokens
		o, release, done := startHeld(t, g)
		var once sync.Once
		end := func() { once.Do(func() { close(release) }) }
		// A failed turn ends the test with the agent still held: let it
		// answer so the gateway can close.
		t.Cleanup(end)
		base := o.BaseURLs[RolePlanner]
		msgs := []map[string]any{{"role": "system", "content": "You plan."}, {"role": "user", "content": o.Task.Question}}
		for turn := 0; turn < turns; turn++ {
			answer, err := agentChat(base, msgs, delegateTool)
			if err != nil {
				t.Fatalf("turn %d: %v", turn, err)
			}
			msgs = append(msgs, answer)
			calls, _ := answer["tool_calls"].([]any)
			for _, c := range calls {
				id, _ := c.(map[string]any)["id"].(string)
				msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": "Nothing found."})
			}
			if len(calls) == 0 {
				msgs = append(msgs, map[string]any{"role": "user", "content": "Check once more."})
			}
		}
		end()
		return <-done
	}
	// The run with room: one sequence, the last turn's prompt n ids.
	free := play(t, 0)
	p := free.Planner
	if len(p.Turns) != turns || len(p.Splits) != 0 {
		t.Fatalf("with room: %d turns, splits %+v; want %d turns and no split", len(p.Turns), p.Splits, turns)
	}
	last := p.Turns[turns-1]
	if last.ReusedPromptTokens == 0 || len(last.Message.ReasoningContent) == 0 && len(p.Turns[0].Message.ReasoningContent) == 0 {
		t.Fatalf("with room: the last turn reused %d ids, reasoning %q: want a continuation in tokens after turns with reasoning",
			last.ReusedPromptTokens, p.Turns[0].Message.ReasoningContent)
	}
	n := len(last.PromptIDs)
	// The same rollout where the last turn's sequence does not fit by one
	// id: the earlier turns fit as before, the last is cut.
	cut := play(t, n+maxTokens-1).Planner
	if len(cut.Turns) != turns {
		t.Fatalf("cut: %d turns, want %d (error %q)", len(cut.Turns), turns, cut.Error)
	}
	if len(cut.Splits) != 1 || cut.Splits[0].Reason != rollout.SplitContextCut || cut.Splits[0].Turn != turns-1 {
		t.Fatalf("cut: splits %+v, want one context cut at turn %d", cut.Splits, turns-1)
	}
	lt := cut.Turns[turns-1]
	// Rendered anew, the cut turn shares only the leading ids up to the
	// first dropped reasoning block with the sequence before it (what a
	// prefix cache still reuses), never all of it.
	prev := cut.Turns[turns-2]
	if len(lt.PromptIDs) >= n || lt.ReusedPromptTokens >= len(prev.PromptIDs)+len(prev.CompletionIDs) {
		t.Errorf("cut turn: prompt of %d ids reusing %d, want the conversation rendered anew: shorter than the %d of the sequence, reusing less than the previous turn's %d",
			len(lt.PromptIDs), lt.ReusedPromptTokens, n, len(prev.PromptIDs)+len(prev.CompletionIDs))
	}
	// Each side of the cut is one sequence without drift.
	for _, piece := range [][]*llm.Turn{cut.Turns[:turns-1], cut.Turns[turns-1:]} {
		seqs, drifts, err := llm.Sequences(piece)
		if err != nil || len(seqs) != 1 || len(drifts) != 0 {
			t.Errorf("cut: a piece of %d turns is %d sequences with drifts %+v (%v), want one without drift", len(piece), len(seqs), drifts, err)
		}
	}
}
