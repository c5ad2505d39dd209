package score

import (
	"context"
	"testing"
)

// answering is a judge model that answers every call with reply,
// counting the calls.
type answering struct {
	reply string
	calls int
}

func (a *answering) Complete(context.Context, string, string) (string, error) {
	a.calls++
	return a.reply, nil
}

func TestForRun(t *testing.T) {
	ctx := context.Background()
	scorer, expert := ForRun(nil)
	if expert != nil {
		t.Errorf("no judge: expert %v, want nil (the run's fallback)", expert)
	}
	if v, err := scorer.Score(ctx, "q", "Paris", "paris"); err != nil || v.Correct != 1 {
		t.Errorf("exact match: %+v, %v, want correct", v, err)
	}
	if v, _ := scorer.Score(ctx, "q", "the capital is Paris", "paris"); v.Correct != 0 {
		t.Errorf("no judge, inexact answer: %+v, want incorrect", v)
	}

	m := &answering{reply: "CORRECT"}
	scorer, expert = ForRun(m)
	if expert == nil {
		t.Fatal("with a judge: no expert judge")
	}
	if v, _ := scorer.Score(ctx, "q", "Paris", "paris"); v.Correct != 1 || m.calls != 0 {
		t.Errorf("exact match with a judge: %+v after %d judge calls, want correct without calling it", v, m.calls)
	}
	if _, _ = scorer.Score(ctx, "q", "the capital is Paris", "paris"); m.calls == 0 {
		t.Errorf("an inexact answer was not sent to the judge")
	}
}
