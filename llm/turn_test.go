package llm

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	openai "github.com/sashabaranov/go-openai"
)

// TestTurnJSONRoundTrip checks that a turn survives JSON, as it must to
// travel from a worker to the process that assembles a step.
func TestTurnJSONRoundTrip(t *testing.T) {
	want := &Turn{
		Message:       openai.ChatCompletionMessage{Role: "assistant", Content: `<tool_call>{"name": "search"`},
		ToolCalls:     []openai.ToolCall{{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "visit", Arguments: `{"url":["http://x"]}`}}},
		ToolCallError: &FormatError{Index: 1, Raw: `<tool_call>{"name": "search"`, Reason: "unclosed <tool_call> block"},
		PromptIDs:     []int32{1, 2, 3}, CompletionIDs: []int32{4, 5}, Logprobs: []float64{-0.5, -0.25},
		FinishReason: "stop", Usage: openai.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5},
		WeightVersion: "step-3", Endpoint: "http://127.0.0.1:1", Latency: 1500 * time.Millisecond, Attempts: 2,
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got Turn
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	if diff := cmp.Diff(want, &got, cmpopts.IgnoreUnexported(Turn{})); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestTurnWithoutPromptIDs checks that the copy holds nothing of the
// trajectory's shared id array and that the turn itself is unchanged.
func TestTurnWithoutPromptIDs(t *testing.T) {
	var p PromptPrefix
	turn := wireTurn(t, &p, &Turn{PromptIDs: []int32{1, 2, 3}, CompletionIDs: []int32{4, 5}, Logprobs: []float64{-1, -2}})
	if turn.contiguous() == nil {
		t.Fatal("the client did not place the completion after the prompt")
	}
	c := turn.WithoutPromptIDs()
	if c.PromptIDs != nil || c.tokens != nil || c.contiguous() != nil {
		t.Errorf("copy keeps prompt ids %v, tokens %v", c.PromptIDs, c.tokens)
	}
	if !slices.Equal(c.CompletionIDs, []int32{4, 5}) || &c.CompletionIDs[0] == &turn.CompletionIDs[0] {
		t.Errorf("copy's completion ids %v share the turn's array", c.CompletionIDs)
	}
	if !slices.Equal(turn.PromptIDs, []int32{1, 2, 3}) || turn.contiguous() == nil {
		t.Errorf("the turn changed: %v %v", turn.PromptIDs, turn.CompletionIDs)
	}
}
