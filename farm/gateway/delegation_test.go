package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
)

// TestDelegationLinks checks that executor calls naming the planner's tool
// call (X-Mgrpo-Delegation) link that call to the executor trajectory in
// the tree (CallRecord.Executor, which rollouts.jsonl records as it is),
// whatever order the executors started in, and that a name matching no
// call, or no name, leaves the call unlinked.
func TestDelegationLinks(t *testing.T) {
	cases := []struct {
		name string
		// delegation returns the header an executor started by call id
		// sends ("" for none).
		delegation func(id string) string
		// want is the executor's task each planner call links to, by call
		// id ("" for unlinked).
		want map[string]string
	}{
		{"named", func(id string) string { return id }, map[string]string{"d1": "Find A.", "d2": "Find B."}},
		{"unnamed", func(string) string { return "" }, map[string]string{"d1": "", "d2": ""}},
		{"unknown call", func(id string) string { return "no-such-" + id }, map[string]string{"d1": "", "d2": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
			g.cfg.AgentURL = pushAgent(t, func(w http.ResponseWriter, o offer) {
				answer, err := delegatingAgent(o, tc.delegation)
				if err != nil {
					json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
					return
				}
				json.NewEncoder(w).Encode(map[string]string{"answer": answer})
			})
			task, ft := testTask()
			scoring := farm.Scoring{Mode: rollout.ModeMGRPO, Weights: rollout.DefaultRewardWeights(), Scorer: exact{}, ExpertFallback: rollout.DefaultExpertFallback}
			res := farm.Execute(context.Background(), g, scoring, task, ft)
			if res.Error != "" {
				t.Fatalf("rollout failed: %s", res.Error)
			}
			tree := res.Tree
			if len(tree.Executors) != 2 || len(tree.Planner.Steps) == 0 {
				t.Fatalf("%d executors, %d planner steps: want 2 and a first step", len(tree.Executors), len(tree.Planner.Steps))
			}
			for _, c := range tree.Planner.Steps[0].Calls {
				got := ""
				if c.Executor >= 0 {
					got = tree.Executors[c.Executor].Task
				}
				if want := tc.want[c.ID]; got != want {
					t.Errorf("call %s links to the executor of task %q, want %q", c.ID, got, want)
				}
			}
		})
	}
}

// delegatingAgent is a planner whose delegations run in reverse order, one
// after another (so the executors' order differs from the calls'), each
// executor sending delegation(call id) as X-Mgrpo-Delegation.
func delegatingAgent(o offer, delegation func(id string) string) (string, error) {
	msgs := []map[string]any{{"role": "system", "content": "You plan."}, {"role": "user", "content": o.Task.Question}}
	for range 5 {
		m, err := agentChat(o.BaseURLs[RolePlanner], msgs, delegateTool)
		if err != nil {
			return "", err
		}
		msgs = append(msgs, m)
		calls, _ := m["tool_calls"].([]any)
		if len(calls) == 0 {
			content, _ := m["content"].(string)
			return content, nil
		}
		reports := make([]string, len(calls))
		for i := len(calls) - 1; i >= 0; i-- {
			c := calls[i].(map[string]any)
			var args struct{ Task string }
			_ = json.Unmarshal([]byte(c["function"].(map[string]any)["arguments"].(string)), &args)
			id, _ := c["id"].(string)
			em, err := agentChatHeader(o.BaseURLs[RoleExecutor], []map[string]any{{"role": "system", "content": "You search."},
				{"role": "user", "content": args.Task}}, nil, DelegationHeader, delegation(id))
			if err != nil {
				return "", err
			}
			reports[i], _ = em["content"].(string)
		}
		for i, c := range calls {
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": c.(map[string]any)["id"], "content": reports[i]})
		}
	}
	return "", nil
}
