package agents

import (
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

func TestBudgetsConfigBudgets(t *testing.T) {
	b := BudgetsConfig{PlannerTurns: 3, ExecutorTurns: 4, MaxTokens: 999, ContextTokens: 8192, Delegations: 2,
		RolloutTimeout: yamlstrict.Duration{Duration: time.Minute}}
	p, e, r := b.Budgets(100, 200)
	if p.MaxTurns != 3 || e.MaxTurns != 4 {
		t.Errorf("turns %d/%d, want 3/4", p.MaxTurns, e.MaxTurns)
	}
	if p.MaxTokensPerTurn != 100 || e.MaxTokensPerTurn != 200 {
		t.Errorf("max tokens %d/%d, want each role's 100/200 (not the budget's 999)", p.MaxTokensPerTurn, e.MaxTokensPerTurn)
	}
	if p.ContextTokens != 8192 || e.ContextTokens != 8192 {
		t.Errorf("context %d/%d, want 8192", p.ContextTokens, e.ContextTokens)
	}
	if r.MaxDelegations != 2 || r.WallClock != time.Minute {
		t.Errorf("rollout budget %+v, want 2 delegations in 1m", r)
	}
	// What BudgetsConfig has no key for keeps the default.
	if d := DefaultRolloutBudget(); r.MaxDelegations == d.MaxDelegations && r.WallClock == d.WallClock {
		t.Fatalf("test settings equal the defaults; pick others")
	}
}
