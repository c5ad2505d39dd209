package score

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// VerdictParser turns a judge's raw reply into a verdict and, when the protocol asks the judge for
// one, the final answer it extracted. Malformed replies return an error wrapping ErrMalformedVerdict.
type VerdictParser func(raw string) (correct bool, extracted string, err error)

// CorrectIncorrectParser is the VerdictParser of the WebThinker/Tongyi judge.
func CorrectIncorrectParser(raw string) (bool, string, error) {
	ok, err := ParseCorrectIncorrect(raw)
	return ok, "", err
}

// Judge scores a case by asking an LLM with a published prompt.
type Judge struct {
	// Model answers the prompt.
	Model ChatModel
	// Template is the prompt, filled by RenderPrompt.
	Template string
	// System is an optional system message; the published protocols use none.
	System string
	// Parse reads the reply.
	Parse VerdictParser
	// Attempts bounds the calls made while calls fail or replies are malformed; values below 1 mean 1.
	Attempts int
}

var _ Scorer = (*Judge)(nil)

// NewCorrectIncorrectJudge returns the WebThinker "Correct/Incorrect" judge (GAIA text-only,
// WebWalkerQA) on m.
func NewCorrectIncorrectJudge(m ChatModel) *Judge {
	return &Judge{Model: m, Template: PromptWebThinker, Parse: CorrectIncorrectParser, Attempts: 1}
}

// NewXBenchJudge returns xbench's Chinese judge on m, without the exact-match step (see XBench).
func NewXBenchJudge(m ChatModel) *Judge {
	return &Judge{Model: m, Template: PromptXBench, Parse: ParseXBenchVerdict, Attempts: 1}
}

// Score asks the judge. Every raw reply is kept in the Verdict, also when the result is an error.
// Failed calls and malformed replies give an error wrapping ErrJudge; a cancelled context gives the
// context's error, not a judge error.
func (j *Judge) Score(ctx context.Context, c Case) (Verdict, error) {
	v := Verdict{Method: MethodJudge}
	prompt := RenderPrompt(j.Template, c)
	attempts := max(j.Attempts, 1)
	var last error
	for range attempts {
		raw, err := j.Model.Complete(ctx, j.System, prompt)
		if err != nil {
			if ctx.Err() != nil {
				return v, fmt.Errorf("judge: %w", ctx.Err())
			}
			last = fmt.Errorf("%w: call: %w", ErrJudge, err)
			continue
		}
		v.JudgeOutput = append(v.JudgeOutput, raw)
		ok, extracted, err := j.Parse(raw)
		if err != nil {
			last = err
			continue
		}
		v.Correct, v.Extracted = ok, extracted
		return v, nil
	}
	if !errors.Is(last, ErrJudge) {
		last = fmt.Errorf("%w: %w", ErrJudge, last)
	}
	return v, last
}

// ExtractXBenchAnswer returns the final answer of a prediction as xbench's grader reads it: the text
// after "最终答案" and its colons on that line, up to the next colon, trimmed. A prediction without
// "最终答案" is taken whole (the project's agents return the bare final answer). Full-width colons are
// accepted besides ASCII ones.
func ExtractXBenchAnswer(prediction string) string {
	i := strings.Index(prediction, "最终答案")
	if i < 0 {
		return strings.TrimSpace(prediction)
	}
	line := prediction[i+len("最终答案"):]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	line = strings.TrimLeft(line, ":：")
	if j := strings.IndexAny(line, ":："); j >= 0 {
		line = line[:j]
	}
	return strings.TrimSpace(line)
}

// XBenchExact is the first step of xbench's grader: the extracted final answer equals the reference
// answer exactly (surrounding whitespace aside).
var XBenchExact Scorer = ScorerFunc(func(_ context.Context, c Case) (Verdict, error) {
	got := ExtractXBenchAnswer(c.Prediction)
	return Verdict{Correct: got == strings.TrimSpace(c.Answer), Method: MethodExact, Extracted: got}, nil
})

// XBench is xbench's grader: exact match of the final answer first, the Chinese judge when it fails.
func XBench(m ChatModel) Scorer {
	return Cascade(XBenchExact, NewXBenchJudge(m))
}
