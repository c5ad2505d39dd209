package gateway

import (
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestBudgetBounds: the main role's calls per rollout are planner_turns,
// the executors' delegations × executor_turns; mode single's main role is
// the agent.
func TestBudgetBounds(t *testing.T) {
	b := BudgetBounds(10, 6, 3, 32768, rollout.ModeMGRPO)
	if b.MaxRolloutTurns[RolePlanner] != 10 || b.MaxRolloutTurns[RoleExecutor] != 18 || b.MaxTurns[RoleExecutor] != 6 {
		t.Errorf("turns %v %v", b.MaxRolloutTurns, b.MaxTurns)
	}
	if b.MaxBodyBytes[RolePlanner] != BodyCapForContext(32768) || b.MaxStop != DefaultMaxStop {
		t.Errorf("caps %v, stop %d", b.MaxBodyBytes, b.MaxStop)
	}
	if s := BudgetBounds(10, 6, 3, 0, rollout.ModeSingle); s.MaxRolloutTurns[RoleAgent] != 10 {
		t.Errorf("single: %v", s.MaxRolloutTurns)
	}
}
