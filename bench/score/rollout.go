package score

import (
	"context"
	"strings"

	"github.com/mgrpo/mgrpo/rollout"
)

// ForRollout adapts s to the farm's scorer (rollout.Scorer): r_correct 1
// when s finds the prediction correct, the judge's outputs kept raw.
func ForRollout(s Scorer) rollout.Scorer { return rolloutScorer{s} }

// rolloutScorer adapts a bench scorer to the farm's Scorer.
type rolloutScorer struct{ s Scorer }

func (r rolloutScorer) Score(ctx context.Context, question, prediction, gold string) (rollout.Verdict, error) {
	v, err := r.s.Score(ctx, Case{Question: question, Answer: gold, Prediction: prediction})
	out := rollout.Verdict{Method: v.Method, Raw: strings.Join(v.JudgeOutput, "\n---\n"), JudgeCalls: len(v.JudgeOutput)}
	if v.Correct {
		out.Correct = 1
	}
	return out, err
}

// ForRun returns a run's r_correct scorer and r_expert judge: GAIA's exact
// match, then the LLM judge m when it is set, which also rates each
// report (r_expert); without m, exact match alone and no expert judge
// (nil), so the run's fallback applies.
func ForRun(m ChatModel) (rollout.Scorer, rollout.ExpertJudge) {
	if m == nil {
		return ForRollout(GAIAExact), nil
	}
	return ForRollout(Cascade(GAIAExact, NewCorrectIncorrectJudge(m))), ExpertJudge{Model: m}
}
