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

// TestForeignNoTask: on each API, a first planner call whose messages do
// not hold the rollout's task (another rollout's question, as a client
// shared across rollouts sends) is answered, flagged foreign for that
// reason and never trained; the rollout's own first call, with its task,
// still starts the planner trajectory after it.
func TestForeignNoTask(t *testing.T) {
	for _, api := range []struct {
		name, path string
		body       func(question string) map[string]any
	}{
		{"chat completions", "/chat/completions", func(q string) map[string]any {
			return map[string]any{"messages": []map[string]any{{"role": "system", "content": "You plan."}, {"role": "user", "content": q}}}
		}},
		{"responses", "/responses", func(q string) map[string]any {
			return map[string]any{"instructions": "You plan.", "input": []any{map[string]any{"role": "user", "content": q}}}
		}},
		{"messages", "/messages", func(q string) map[string]any {
			return map[string]any{"max_tokens": 100, "system": "You plan.",
				"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": q}}}}}
		}},
	} {
		t.Run(api.name, func(t *testing.T) {
			g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
			var foreign, own int
			g.cfg.AgentURL = pushAgent(t, func(w http.ResponseWriter, o offer) {
				base := o.BaseURLs[RolePlanner]
				foreign, _ = post(t, base+api.path, api.body("What is the capital of another rollout's country?"))
				// Wrapped differently, the task is still the task.
				own, _ = post(t, base+api.path, api.body("Question:\n  "+strings.ReplaceAll(o.Task.Question, " ", "\n")))
				w.Write([]byte(`{"answer":"<answer>42</answer>"}`))
			})
			task, ft := testTask()
			tree := g.Run(context.Background(), task, ft)
			if foreign != http.StatusOK || own != http.StatusOK {
				t.Fatalf("calls answered %d and %d, want 200 for both", foreign, own)
			}
			if len(tree.Foreign) != 1 || tree.Foreign[0].FormatOK || !strings.Contains(strings.Join(tree.Foreign[0].FormatErrors, ";"), foreignNoTask) {
				t.Fatalf("foreign %+v, want the call without the task flagged %q", tree.Foreign, foreignNoTask)
			}
			if len(tree.Planner.Turns) != 1 || tree.Planner.Error != "" {
				t.Errorf("planner has %d turns (error %q), want the call holding the task as its one turn", len(tree.Planner.Turns), tree.Planner.Error)
			}
		})
	}
}
