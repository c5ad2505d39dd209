package agents

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Budget bounds one agent's trajectory.
type Budget struct {
	// MaxTurns is the most model calls of the trajectory; a trajectory
	// that would need more ends with its format invalid.
	MaxTurns int `yaml:"max_turns" json:"max_turns"`
	// MaxTokensPerTurn caps each completion (the request's max_tokens); 0
	// leaves the role's sampling default.
	MaxTokensPerTurn int `yaml:"max_tokens_per_turn" json:"max_tokens_per_turn"`
	// ContextTokens is the model's context in tokens; 0 disables the
	// answer-now warning.
	ContextTokens int `yaml:"context_tokens" json:"context_tokens"`
	// AnswerNowMargin: when the last call's prompt plus completion come
	// within this many tokens of ContextTokens, the agent is told to answer
	// now.
	AnswerNowMargin int `yaml:"answer_now_margin" json:"answer_now_margin"`
	// ToolConcurrency bounds the tool calls of one turn that run at once.
	ToolConcurrency int `yaml:"tool_concurrency" json:"tool_concurrency"`
}

// RolloutBudget bounds a whole planner rollout.
type RolloutBudget struct {
	// MaxDelegations caps the executors one rollout may start; further
	// delegations get an observation saying the budget is spent.
	MaxDelegations int `yaml:"max_delegations" json:"max_delegations"`
	// WallClock bounds the rollout's time; 0 means no limit.
	WallClock time.Duration `yaml:"wall_clock" json:"wall_clock"`
}

// ErrWallClock is the cause of a rollout's context past its wall-clock
// limit (RolloutBudget.WallClock); trajectories cut by it record it.
var ErrWallClock = errors.New("rollout wall-clock limit reached")

// withWallClock returns ctx ending after limit with a cause wrapping
// ErrWallClock that names the limit; limit 0 adds no deadline.
func withWallClock(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	if limit <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, limit, fmt.Errorf("%w (%v)", ErrWallClock, limit))
}

// DefaultPlannerBudget returns the planner's default budget.
func DefaultPlannerBudget() Budget {
	return Budget{MaxTurns: 12, MaxTokensPerTurn: 2048, ContextTokens: 32768, AnswerNowMargin: 4096, ToolConcurrency: 4}
}

// DefaultExecutorBudget returns an executor's (and the single agent's)
// default budget.
func DefaultExecutorBudget() Budget {
	return Budget{MaxTurns: 12, MaxTokensPerTurn: 2048, ContextTokens: 32768, AnswerNowMargin: 4096, ToolConcurrency: 4}
}

// DefaultRolloutWallClock is the default limit of one rollout's time. A
// rollout of a dozen planner turns with their executors on a loaded server
// runs for many minutes, and each model call may take up to its own
// deadline (13 minutes by default at 2048 tokens, see llm.RetryPolicy); 30
// minutes leaves room for that while a stuck rollout holds its step for at
// most half an hour.
const DefaultRolloutWallClock = 30 * time.Minute

// DefaultRolloutBudget returns the default per-rollout limits.
func DefaultRolloutBudget() RolloutBudget {
	return RolloutBudget{MaxDelegations: 16, WallClock: DefaultRolloutWallClock}
}

// Validate reports every invalid field of b, named with prefix.
func (b Budget) Validate(prefix string) error {
	var errs []error
	if b.MaxTurns < 1 {
		errs = append(errs, fmt.Errorf("%s.max_turns %d: must be at least 1", prefix, b.MaxTurns))
	}
	if b.MaxTokensPerTurn < 0 {
		errs = append(errs, fmt.Errorf("%s.max_tokens_per_turn %d: must not be negative (0 = server default)", prefix, b.MaxTokensPerTurn))
	}
	if b.ContextTokens < 0 || b.AnswerNowMargin < 0 {
		errs = append(errs, fmt.Errorf("%s: context_tokens %d and answer_now_margin %d must not be negative", prefix, b.ContextTokens, b.AnswerNowMargin))
	}
	if b.ContextTokens > 0 && b.AnswerNowMargin >= b.ContextTokens {
		errs = append(errs, fmt.Errorf("%s.answer_now_margin %d: must be below context_tokens %d", prefix, b.AnswerNowMargin, b.ContextTokens))
	}
	if b.ToolConcurrency < 1 {
		errs = append(errs, fmt.Errorf("%s.tool_concurrency %d: must be at least 1", prefix, b.ToolConcurrency))
	}
	return errors.Join(errs...)
}

// Validate reports every invalid field of b.
func (b RolloutBudget) Validate() error {
	var errs []error
	if b.MaxDelegations < 0 {
		errs = append(errs, fmt.Errorf("rollout.max_delegations %d: must not be negative", b.MaxDelegations))
	}
	if b.WallClock < 0 {
		errs = append(errs, fmt.Errorf("rollout.wall_clock %v: must not be negative (0 = no limit)", b.WallClock))
	}
	return errors.Join(errs...)
}
