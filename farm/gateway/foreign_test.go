package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestForeignPlannerCalls: a second planner conversation under a rollout's
// URL is answered, kept flagged as foreign and never becomes part of the
// planner's trajectory; an executor no delegation names is unmatched.
func TestForeignPlannerCalls(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	var status int
	g.cfg.AgentURL = pushAgent(t, func(w http.ResponseWriter, o offer) {
		playAgent(o)
		status, _ = post(t, o.BaseURLs[RolePlanner]+"/chat/completions",
			map[string]any{"messages": []map[string]any{{"role": "user", "content": "another rollout's question"}}})
		post(t, o.BaseURLs[RoleExecutor]+"/chat/completions",
			map[string]any{"messages": []map[string]any{{"role": "user", "content": "a task nobody delegated"}}})
		w.Write([]byte(`{"answer":"42"}`))
	})
	task, ft := testTask()
	tree := g.Run(context.Background(), task, ft)
	if status != http.StatusOK {
		t.Errorf("foreign call answered %d, want 200", status)
	}
	if len(tree.Foreign) != 1 || !strings.Contains(tree.Foreign[0].FormatErrors[0], "second planner conversation") || tree.Foreign[0].FormatOK {
		t.Fatalf("foreign %+v, want the second conversation flagged", tree.Foreign)
	}
	if len(tree.Planner.Splits) != 0 {
		t.Errorf("planner splits %+v: the foreign conversation was merged into the planner", tree.Planner.Splits)
	}
	if len(tree.Unmatched) != 1 || !strings.Contains(tree.Executors[tree.Unmatched[0]].Task, "nobody delegated") {
		t.Errorf("unmatched %v, want the undelegated executor", tree.Unmatched)
	}
}
