package rollout

import (
	"context"
	"fmt"
	"math"
)

// RewardWeights are the coefficients of the main reward
// R_M = Alpha1·r_format + Alpha2·r_correct and of the sub reward
// R_S = Beta1·r_format + Beta2·r_correct_main + Beta3·r_expert.
type RewardWeights struct {
	Alpha1 float64 `json:"alpha1" yaml:"alpha1"`
	Alpha2 float64 `json:"alpha2" yaml:"alpha2"`
	Beta1  float64 `json:"beta1" yaml:"beta1"`
	Beta2  float64 `json:"beta2" yaml:"beta2"`
	Beta3  float64 `json:"beta3" yaml:"beta3"`
}

// DefaultRewardWeights returns the paper's weights: α = (0.1, 0.9) and
// β = (0.1, 0.4, 0.5).
func DefaultRewardWeights() RewardWeights {
	return RewardWeights{Alpha1: 0.1, Alpha2: 0.9, Beta1: 0.1, Beta2: 0.4, Beta3: 0.5}
}

// Validate reports an error when a weight is negative or not finite, or when
// all weights of one level are 0 (that level's rewards would be constant).
func (w RewardWeights) Validate() error {
	named := []struct {
		name string
		v    float64
	}{{"alpha1", w.Alpha1}, {"alpha2", w.Alpha2}, {"beta1", w.Beta1}, {"beta2", w.Beta2}, {"beta3", w.Beta3}}
	for _, n := range named {
		if math.IsNaN(n.v) || math.IsInf(n.v, 0) || n.v < 0 {
			return fmt.Errorf("reward weight %s = %v: must be a finite number ≥ 0", n.name, n.v)
		}
	}
	if w.Alpha1+w.Alpha2 == 0 {
		return fmt.Errorf("reward weights alpha1 and alpha2 are both 0: main rewards would be constant")
	}
	if w.Beta1+w.Beta2+w.Beta3 == 0 {
		return fmt.Errorf("reward weights beta1, beta2 and beta3 are all 0: sub rewards would be constant")
	}
	return nil
}

// MainReward returns R_M for a planner trajectory: 0 when formatOK is false,
// else Alpha1 + Alpha2·correct, with correct clamped to [0, 1].
func (w RewardWeights) MainReward(formatOK bool, correct float64) float64 {
	if !formatOK {
		return 0
	}
	return w.Alpha1 + w.Alpha2*ClampUnit(correct)
}

// SubReward returns R_S for an executor trajectory: 0 when formatOK is false,
// else Beta1 + Beta2·correctMain + Beta3·expert, with correctMain and expert
// clamped to [0, 1].
func (w RewardWeights) SubReward(formatOK bool, correctMain, expert float64) float64 {
	if !formatOK {
		return 0
	}
	return w.Beta1 + w.Beta2*ClampUnit(correctMain) + w.Beta3*ClampUnit(expert)
}

// ClampUnit clamps v to [0, 1]; NaN becomes 0. Correctness values and
// expert scores go through it before they enter a reward.
func ClampUnit(v float64) float64 {
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v >= 1:
		return 1
	}
	return v
}

// Verdict is a scorer's judgement of one prediction.
type Verdict struct {
	// Correct is the correctness in [0, 1] (1 for an exact match).
	Correct float64 `json:"correct"`
	// Method names how the verdict was reached, such as "exact" or "llm-judge".
	Method string `json:"method"`
	// Raw is the judge's output as received, kept for inspection; empty when
	// no model was asked.
	Raw string `json:"raw,omitempty"`
	// JudgeCalls counts the model answers the verdict took (0 for exact
	// matching), for the cost meter.
	JudgeCalls int `json:"judge_calls,omitempty"`
}

// Scorer judges a final answer against the gold answer (r_correct).
// Implementations live outside this package and must be safe for concurrent
// use.
type Scorer interface {
	// Score returns the verdict for prediction given the question and the gold
	// answer. An empty prediction is a valid input and scores 0. An error
	// means no verdict could be reached (for example an unreachable judge);
	// the caller decides whether to retry or record it.
	Score(ctx context.Context, question, prediction, gold string) (Verdict, error)
}

// ExpertJudge rates how well an executor carried out its subtask (r_expert).
// Implementations live outside this package and must be safe for concurrent
// use.
type ExpertJudge interface {
	// Rate returns a score in [0, 1] for report as an answer to subtask, and
	// the judge's raw output. An error means no score could be obtained.
	Rate(ctx context.Context, subtask, report string) (score float64, raw string, err error)
}

// ExpertFallback names what r_expert becomes when a run has no ExpertJudge.
// A run states its fallback at start (see Describe).
type ExpertFallback string

// The expert fallbacks.
const (
	// ExpertFallbackFormat sets r_expert to the executor's r_format.
	ExpertFallbackFormat ExpertFallback = "format"
	// ExpertFallbackZero sets r_expert to 0.
	ExpertFallbackZero ExpertFallback = "zero"
	// ExpertFallbackCorrectMain sets r_expert to r_correct_main.
	ExpertFallbackCorrectMain ExpertFallback = "correct-main"
	// DefaultExpertFallback is the fallback used when none is configured.
	DefaultExpertFallback = ExpertFallbackFormat
)

// ParseExpertFallback returns the fallback named s; the empty string selects
// DefaultExpertFallback.
func ParseExpertFallback(s string) (ExpertFallback, error) {
	switch f := ExpertFallback(s); f {
	case "":
		return DefaultExpertFallback, nil
	case ExpertFallbackFormat, ExpertFallbackZero, ExpertFallbackCorrectMain:
		return f, nil
	}
	return "", fmt.Errorf("unknown expert fallback %q (want format, zero or correct-main)", s)
}

// Expert returns the r_expert value the fallback assigns to an executor with
// the given format validity, in a rollout whose main correctness is
// correctMain.
func (f ExpertFallback) Expert(formatOK bool, correctMain float64) float64 {
	switch f {
	case ExpertFallbackZero:
		return 0
	case ExpertFallbackCorrectMain:
		return ClampUnit(correctMain)
	default:
		if formatOK {
			return 1
		}
		return 0
	}
}

// Describe returns the sentence a run prints at start to state what r_expert
// is without a judge.
func (f ExpertFallback) Describe() string {
	switch f {
	case ExpertFallbackZero:
		return "no expert judge configured: r_expert = 0 for every executor (fallback \"zero\")"
	case ExpertFallbackCorrectMain:
		return "no expert judge configured: r_expert = r_correct_main of the executor's rollout (fallback \"correct-main\")"
	default:
		return "no expert judge configured: r_expert = r_format of each executor (fallback \"format\")"
	}
}

// ExpertScore returns r_expert for one executor: the judge's rating when judge
// is not nil, else the fallback's value with an empty raw output. A judge's
// error is returned as is; the score is then 0.
func ExpertScore(ctx context.Context, judge ExpertJudge, fallback ExpertFallback, subtask, report string, formatOK bool, correctMain float64) (score float64, raw string, err error) {
	if judge == nil {
		return fallback.Expert(formatOK, correctMain), "", nil
	}
	score, raw, err = judge.Rate(ctx, subtask, report)
	if err != nil {
		return 0, raw, fmt.Errorf("rate executor report: %w", err)
	}
	return ClampUnit(score), raw, nil
}
