package replay

import (
	"context"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/llm"
)

// fakeCompleter is a fakeModel that also makes raw completions.
type fakeCompleter struct {
	fakeModel
	completions int
}

func (f *fakeCompleter) Complete(_ context.Context, req llm.CompletionRequest) (*llm.Turn, error) {
	f.completions++
	return &llm.Turn{PromptIDs: req.PromptIDs, CompletionIDs: []int32{7}, Logprobs: []float64{-1}, FinishReason: "stop"}, nil
}

// A recorded run of the gateway's agents keeps their raw completions
// working (and recorded); a model without them gains none.
func TestRecorderPassesRawCompletionsThrough(t *testing.T) {
	kv := newMemKV()
	rec := NewRecorder(kv, nil)
	inner := &fakeCompleter{}
	c, ok := rec.Model("executor", inner).(Completer)
	if !ok {
		t.Fatal("the recorded model of a Completer makes no raw completions")
	}
	turn, err := c.Complete(context.Background(), llm.CompletionRequest{PromptIDs: []int32{1, 2}, TrajectoryKey: "r/executor/t0"})
	if err != nil || inner.completions != 1 || len(turn.CompletionIDs) != 1 {
		t.Fatalf("Complete: %v, %d inner calls, turn %+v", err, inner.completions, turn)
	}
	if got := rec.Stats().Calls; got != 1 {
		t.Errorf("recorded %d calls, want 1", got)
	}
	kept := 0
	for k := range kv.m {
		if strings.HasPrefix(k, prefixCompletion) {
			kept++
		}
	}
	if kept != 1 {
		t.Errorf("%d completion entries recorded, want 1", kept)
	}
	if _, ok := rec.Model("executor", &fakeModel{}).(Completer); ok {
		t.Error("a model without raw completions gained them by being recorded")
	}
}
