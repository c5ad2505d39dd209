package score

import (
	"context"
	"testing"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
	"github.com/mgrpo/mgrpo/sim/web"
)

// TestSimPlaysTheJudges renders the real judge prompts and checks that the
// simulated model answers them in a form the verdict parsers read, so runs
// on the simulated world can exercise their judge paths offline.
func TestSimPlaysTheJudges(t *testing.T) {
	model := policy.New(policy.DefaultSkills())
	ask := func(prompt string) string {
		out := model.Act(policy.Request{Messages: []policy.Message{{Role: "user", Content: prompt}}})
		return out.Content
	}
	for _, tmpl := range []string{PromptWebThinker, PromptTongyiGAIA} {
		for _, tt := range []struct {
			pred, gold string
			want       bool
		}{{"Kajen Shilling.", "Kajen shilling", true}, {"Paris", "Lyon", false}} {
			reply := ask(RenderPrompt(tmpl, Case{Question: "What is the currency of Bretoria?", Answer: tt.gold, Prediction: tt.pred}))
			got, err := ParseCorrectIncorrect(reply)
			if err != nil || got != tt.want {
				t.Errorf("equivalence judge on %q vs %q replied %q: %v, %v; want %v", tt.pred, tt.gold, reply, got, err, tt.want)
			}
		}
	}
	reply := ask(RenderPrompt(PromptXBench, Case{Question: "问题", Answer: "北京", Prediction: "北京"}))
	if got, _, err := ParseXBenchVerdict(reply); err != nil || !got {
		t.Errorf("xbench judge replied %q: %v, %v; want correct", reply, got, err)
	}
	task := web.SubtaskText(web.Chain{Entity: "Bretoria", Relations: []string{"currency"}})
	for _, tt := range []struct {
		report string
		want   float64
	}{
		{web.FactSentence(web.Fact{Subject: "Bretoria", Relation: "currency", Object: "Kajen shilling"}), 1},
		{web.MissSentence("currency", "Bretoria"), 0.3},
		{"Bretoria is a country.", 0.1},
	} {
		j := ExpertJudge{Model: chatFunc(func(user string) string { return ask(user) })}
		got, raw, err := j.Rate(t.Context(), task, tt.report)
		if err != nil || got != tt.want {
			t.Errorf("expert judge on %q replied %q: %v, %v; want %v", tt.report, raw, got, err, tt.want)
		}
	}
}

// chatFunc adapts a function of the user message to ChatModel.
type chatFunc func(user string) string

func (f chatFunc) Complete(_ context.Context, _, user string) (string, error) { return f(user), nil }
