package farm

import (
	"encoding/json"
	"slices"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// chainTurns returns n turns whose prompts each extend the previous
// prompt and completion, except those in breaks (their prompt starts
// afresh); every turn but the last calls a tool.
func chainTurns(n int, breaks ...int) []*llm.Turn {
	var turns []*llm.Turn
	var prev []int32
	for i := range n {
		prompt := append(slices.Clone(prev), int32(100+i))
		if slices.Contains(breaks, i) {
			prompt = []int32{int32(500 + i), 1}
		}
		t := &llm.Turn{PromptIDs: prompt, CompletionIDs: []int32{int32(200 + i), 2}, Logprobs: []float64{-0.5, -0.25}, FinishReason: "stop"}
		if i < n-1 {
			t.ToolCalls = []openai.ToolCall{{ID: "c", Function: openai.FunctionCall{Name: "search", Arguments: "{}"}}}
		}
		turns = append(turns, t)
		prev = append(slices.Clone(prompt), t.CompletionIDs...)
	}
	return turns
}

// TestTrajectorySplits: a declared history edit starts a new sequence
// (even where the ids happen to extend) and counts apart from drift; an
// undeclared break is drift; each sequence records its turns, their finish
// reasons (tool_calls for a tool-call turn) and why it started; and the
// store's codec keeps all of it.
func TestTrajectorySplits(t *testing.T) {
	tr := &agents.Trajectory{Role: agents.RolePlanner, Turns: chainTurns(5, 4),
		Splits: []agents.Split{{Turn: 2, Reason: rollout.SplitHistoryEdit, Message: 3, Detail: "truncated"}}}
	got := trajectorySequences(tr)
	if got.SequenceError != "" {
		t.Fatal(got.SequenceError)
	}
	if got.Drifts != 1 || got.HistoryEdits != 1 || len(got.Sequences) != 3 {
		t.Fatalf("drifts %d, history edits %d, %d sequences; want 1, 1, 3", got.Drifts, got.HistoryEdits, len(got.Sequences))
	}
	want := []struct {
		first   int
		reasons []string
		split   string
	}{
		{0, []string{"tool_calls", "tool_calls"}, ""},
		{2, []string{"tool_calls", "tool_calls"}, rollout.SplitHistoryEdit},
		{4, []string{"stop"}, rollout.SplitDrift},
	}
	for i, w := range want {
		s := got.Sequences[i]
		if s.FirstTurn != w.first || !slices.Equal(s.TurnFinishReasons, w.reasons) || s.Split != w.split {
			t.Errorf("sequence %d: first turn %d, finish reasons %v, split %q; want %d, %v, %q", i, s.FirstTurn, s.TurnFinishReasons, s.Split, w.first, w.reasons, w.split)
		}
	}
	// The second sequence starts at turn 2: its ids are turn 3's prompt
	// and completion, not the whole conversation.
	if n := len(tr.Turns[3].PromptIDs) + 2; len(got.Sequences[1].InputIDs) != n {
		t.Errorf("second sequence has %d ids, want %d (turn 3's prompt and completion)", len(got.Sequences[1].InputIDs), n)
	}

	res := &RolloutResult{Task: rollout.RolloutTask{Run: "r", Step: 1, QueryID: "q"}, Tree: &agents.Rollout{Planner: tr}, Planner: got}
	var back *RolloutResult
	if err := encodeResult(res, func(b json.RawMessage) error {
		var err error
		back, err = decodeResult(b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if back.Planner.HistoryEdits != 1 || back.Planner.Drifts != 1 {
		t.Errorf("decoded counts: history edits %d drifts %d, want 1 and 1", back.Planner.HistoryEdits, back.Planner.Drifts)
	}
	for i := range got.Sequences {
		a, b := got.Sequences[i], back.Planner.Sequences[i]
		if a.FirstTurn != b.FirstTurn || !slices.Equal(a.TurnFinishReasons, b.TurnFinishReasons) || a.Split != b.Split {
			t.Errorf("sequence %d decoded as %d %v %q, want %d %v %q", i, b.FirstTurn, b.TurnFinishReasons, b.Split, a.FirstTurn, a.TurnFinishReasons, a.Split)
		}
	}
	if sp := back.Tree.Planner.Splits; len(sp) != 1 || sp[0] != tr.Splits[0] {
		t.Errorf("decoded tree splits %+v, want %+v", sp, tr.Splits)
	}
}
