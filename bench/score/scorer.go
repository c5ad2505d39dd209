// Package score decides whether a prediction answers a benchmark question: GAIA's official
// question_scorer, the published LLM-judge prompts (WebThinker/Tongyi "Correct/Incorrect" and
// xbench's Chinese judge), and a cascade of the two.
package score

import (
	"context"
	"errors"
	"fmt"
)

// Case is what a scorer looks at.
type Case struct {
	Question   string
	Answer     string
	Prediction string
}

// Verdict is a scorer's decision.
type Verdict struct {
	// Correct is the verdict; meaningless when the scorer returned an error.
	Correct bool
	// Method is "exact" when string matching decided, "judge" when an LLM judge did.
	Method string
	// JudgeOutput keeps the raw reply of every judge call made, in order, including the replies of
	// calls that failed to parse.
	JudgeOutput []string
	// Extracted is the final answer the judge (or the xbench exact step) pulled out of the prediction,
	// when the protocol extracts one.
	Extracted string
}

// Methods recorded in Verdict.Method.
const (
	MethodExact = "exact"
	MethodJudge = "judge"
)

// Scorer scores one case. An error means there is no verdict (the judge failed or replied in a form
// that cannot be parsed); it wraps ErrJudge in that case, and the Verdict still carries the raw judge
// output. Implementations are safe for concurrent use when their ChatModel is.
type Scorer interface {
	Score(ctx context.Context, c Case) (Verdict, error)
}

// ScorerFunc adapts a function to Scorer.
type ScorerFunc func(ctx context.Context, c Case) (Verdict, error)

// Score calls f.
func (f ScorerFunc) Score(ctx context.Context, c Case) (Verdict, error) { return f(ctx, c) }

// ChatModel is the one call a judge needs from an inference client: send a system and a user message,
// get the assistant's text back. An empty system means no system message. It must be safe for
// concurrent use.
type ChatModel interface {
	Complete(ctx context.Context, system, user string) (string, error)
}

// ErrJudge is wrapped by every error that means "the judge gave no verdict": a failed call or a
// malformed reply. Such results are counted as judge errors, never as wrong answers.
var ErrJudge = errors.New("judge error")

// ErrMalformedVerdict is wrapped when a judge reply holds no parsable verdict.
var ErrMalformedVerdict = fmt.Errorf("%w: malformed verdict", ErrJudge)

// GAIAExact is GAIA's official question_scorer as a Scorer.
var GAIAExact Scorer = ScorerFunc(func(_ context.Context, c Case) (Verdict, error) {
	return Verdict{Correct: QuestionScorer(c.Prediction, c.Answer), Method: MethodExact}, nil
})

// Cascade returns a scorer that tries first and, when first says incorrect, asks then. An error from
// first is returned as is.
func Cascade(first, then Scorer) Scorer {
	return ScorerFunc(func(ctx context.Context, c Case) (Verdict, error) {
		v, err := first.Score(ctx, c)
		if err != nil || v.Correct {
			return v, err
		}
		return then.Score(ctx, c)
	})
}
