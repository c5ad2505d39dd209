package agents

import "github.com/mgrpo/mgrpo/internal/yamlstrict"

// BudgetsConfig holds the agents' budgets as a run's configuration holds
// them (its budgets key, read by the composition root).
type BudgetsConfig struct {
	PlannerTurns   int                 `yaml:"planner_turns" doc:"planner model calls per rollout"`
	ExecutorTurns  int                 `yaml:"executor_turns" doc:"executor model calls per subtask"`
	MaxTokens      int                 `yaml:"max_tokens" doc:"completion tokens per call"`
	ContextTokens  int                 `yaml:"context_tokens" doc:"model context; near it the agent is told to answer now"`
	Delegations    int                 `yaml:"delegations" doc:"executors per rollout"`
	RolloutTimeout yamlstrict.Duration `yaml:"rollout_timeout" flag:"rollout-timeout" doc:"wall-clock limit per rollout ({{DURATION}}): past it the rollout ends with what it has, recorded with the reason, and the step goes on"`
}

// Budgets returns the agents' budgets: the defaults, with b's turns,
// context, delegations and rollout timeout, and each role's completion
// cap per call (a role's own max_tokens overrides the budget's: the
// agents send the budget's cap with every call, which would replace the
// client's).
func (b BudgetsConfig) Budgets(plannerMaxTokens, executorMaxTokens int) (planner, executor Budget, rollout RolloutBudget) {
	planner, executor, rollout = DefaultPlannerBudget(), DefaultExecutorBudget(), DefaultRolloutBudget()
	planner.MaxTurns, executor.MaxTurns = b.PlannerTurns, b.ExecutorTurns
	planner.MaxTokensPerTurn, executor.MaxTokensPerTurn = plannerMaxTokens, executorMaxTokens
	planner.ContextTokens, executor.ContextTokens = b.ContextTokens, b.ContextTokens
	rollout.MaxDelegations, rollout.WallClock = b.Delegations, b.RolloutTimeout.Duration
	return planner, executor, rollout
}
